"""`describe --status` / `describe --replication` output, laid out as Kafka 4.3.1's
`MetadataQuorumCommand` prints it (reference §6.4).

Invariants: --status is 8 lines, labels padded to column 24; MaxFollowerLag is the leader's LEO
minus the smallest voter LEO (the first such voter in response order), MaxFollowerLagTimeMs 0
when that voter is the leader, else the difference of last-caught-up timestamps, -1 if either
is unknown; a node prints as {"id": N[, "directoryId": "..."][, "endpoints": [...]]} with the
directory id omitted when ZERO. --replication is `ToolsUtils.prettyPrintTable`: every cell
left-aligned, padded to the column width and followed by a tab; rows Leader, Followers,
Observers.
"""

from __future__ import annotations

from metaquorum.admin.client import AdminError, QuorumInfo, ReplicaInfo
from metaquorum.protocol.types import Uuid


def _leader(info: QuorumInfo) -> ReplicaInfo:
    for v in info.voters:
        if v.replica_id == info.leader_id:
            return v
    raise AdminError(f"leader {info.leader_id} is not among the voters")


def _node(info: QuorumInfo, r: ReplicaInfo) -> str:
    out = '{"id": ' + str(r.replica_id)
    if r.directory_id != Uuid.ZERO:
        out += f', "directoryId": "{r.directory_id}"'
    endpoints = info.nodes.get(r.replica_id, [])
    if endpoints:
        out += ', "endpoints": [' + ", ".join(f'"{e}"' for e in endpoints) + "]"
    return out + "}"


def format_status(cluster_id: str, info: QuorumInfo) -> str:
    leader = _leader(info)
    min_voter = min(info.voters, key=lambda v: v.log_end_offset)
    lag = leader.log_end_offset - min_voter.log_end_offset
    if min_voter is leader:
        lag_ms = 0
    elif leader.last_caught_up_timestamp != -1 and min_voter.last_caught_up_timestamp != -1:
        lag_ms = leader.last_caught_up_timestamp - min_voter.last_caught_up_timestamp
    else:
        lag_ms = -1
    voters = "[" + ", ".join(_node(info, v) for v in info.voters) + "]"
    observers = "[" + ", ".join(_node(info, o) for o in info.observers) + "]"
    rows = [
        ("ClusterId:", cluster_id),
        ("LeaderId:", info.leader_id),
        ("LeaderEpoch:", info.leader_epoch),
        ("HighWatermark:", info.high_watermark),
        ("MaxFollowerLag:", lag),
        ("MaxFollowerLagTimeMs:", lag_ms),
        ("CurrentVoters:", voters),
        ("CurrentObservers:", observers),
    ]
    return "\n".join(f"{label:<24}{value}" for label, value in rows) + "\n"


def format_replication(info: QuorumInfo) -> str:
    leader = _leader(info)
    headers = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    rows: list[list[str]] = []

    def add(r: ReplicaInfo, status: str) -> None:
        rows.append(
            [
                str(r.replica_id),
                str(r.directory_id),
                str(r.log_end_offset),
                str(leader.log_end_offset - r.log_end_offset),
                str(r.last_fetch_timestamp),
                str(r.last_caught_up_timestamp),
                status,
            ]
        )

    add(leader, "Leader")
    for v in info.voters:
        if v.replica_id != info.leader_id:
            add(v, "Follower")
    for o in info.observers:
        add(o, "Observer")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = [
        "".join(c.ljust(w) + "\t" for c, w in zip(row, widths, strict=True))
        for row in [headers, *rows]
    ]
    return "\n".join(lines) + "\n"

"""What this node knows about the quorum, for /status, /readyz, /metrics and `make run`.

Role: a read-only snapshot of the core and driver (role, leader, epoch, HW, log end, the
leader's per-replica progress). Invariant: only reads; safe to call from any coroutine on the
node's event loop between driver steps.
"""

from __future__ import annotations

from typing import Any

from metaquorum.core.states import (
    CandidateState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
)
from metaquorum.runtime.driver import Driver
from metaquorum.runtime.version import SOFTWARE_NAME, software_version


def kafka_state_name(driver: Driver) -> str:
    """Kafka 4.x `current-state` gauge values (reference §7)."""
    node = driver.node
    st = node.state
    voted = st.election(node.local_id).voted_key is not None
    if isinstance(st, LeaderState | ResignedState):
        return "leader"
    if isinstance(st, CandidateState):
        return "candidate"
    if isinstance(st, ProspectiveState):
        return "prospective-voted" if voted else "prospective"
    if isinstance(st, FollowerState):
        return "follower" if node.is_voter else "observer"
    assert isinstance(st, UnattachedState)
    if not node.is_voter:
        return "observer"
    return "unattached-voted" if voted else "unattached"


def node_status(driver: Driver) -> dict[str, Any]:
    node = driver.node
    hw = node.high_watermark
    election = node.state.election(node.local_id)
    out: dict[str, Any] = {
        "node_id": node.local_id,
        "software_name": SOFTWARE_NAME,
        "version": software_version(),
        "cluster_id": driver.cluster_id,
        # meta.properties' directory.id (KIP-853); a static quorum's DescribeQuorum has none
        "directory_id": node.local.directory_id,
        "state": kafka_state_name(driver),
        "leader_id": node.leader_id,
        "epoch": node.epoch,
        "voted_id": -1 if election.voted_key is None else election.voted_key.id,
        "high_watermark": -1 if hw is None else hw,
        "log_end_offset": node.log.end_offset,
        "log_end_epoch": node.log.last_fetched_epoch,
        "flushed_offset": node.log.flushed_offset,
        "voters": sorted(node.voters.voter_ids),
        # each voter's directory id as this node's log has it (None for a static voter set): the
        # operator's lost-majority check tells a voter whose pod came back on a new volume by it
        "voter_keys": [
            {"id": k.id, "directory_id": k.directory_id} for k in node.voters.voter_keys()
        ],
        "appended_records": driver.stats.appends,
        "committed_appends": driver.stats.committed,
        "fsyncs": driver.io.fsyncs,
        "log_start_offset": node.log.start_offset,
        "snapshot_id": None
        if node.log.snapshot is None
        else [node.log.snapshot.snapshot_id.offset, node.log.snapshot.snapshot_id.epoch],
        "snapshots_written": driver.snapshots_written,
        "state_machine": {
            "applied_offset": driver.state_machine.applied_offset,
            "keys": len(driver.state_machine.data),
            "digest": driver.state_machine.digest(),
        },
    }
    progress = node.progress
    if isinstance(node.state, LeaderState) and progress is not None:
        replicas = []
        tables = (
            ("voter", list(progress.voters.values())),
            ("observer", list(progress.observers.values())),
        )
        for kind, table in tables:
            for r in sorted(table, key=lambda r: (r.replica_id, r.directory_id or "")):
                rid = r.replica_id
                end = node.log.end_offset if rid == node.local_id else r.end_offset
                replicas.append(
                    {
                        "id": rid,
                        "kind": kind,
                        "log_end_offset": -1 if end is None else end,
                        "lag": -1 if end is None else node.log.end_offset - end,
                        "last_fetch_timestamp": r.last_fetch_ms,
                        "last_caught_up_timestamp": r.last_caught_up_ms,
                    }
                )
        out["replicas"] = replicas
    return out


def is_ready(driver: Driver) -> tuple[bool, str]:
    """/readyz: a leader is known and this replica has caught up to the HW it knows."""
    node = driver.node
    if node.leader_id < 0:
        return False, "no known leader"
    hw = node.high_watermark
    if hw is None:
        return False, "high watermark unknown"
    if node.log.flushed_offset < hw:
        return False, f"flushed offset {node.log.flushed_offset} behind high watermark {hw}"
    return True, "ok"

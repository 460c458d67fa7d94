"""Re-form a quorum around one replica's log: the step `backup restore` and `storage recover`
share (KIP-853 voter sets; KIP-595 epochs).

Role: append one control batch [KRaftVersion(1), Voters{this node alone}] at the log's end, in a
new epoch E = max(quorum-state epoch, last log epoch) + 1, and write quorum-state
{leaderEpoch E, no leader, no vote}. On start the node is the only voter of the latest voter
set, elects itself in epoch E + 1 and commits everything before the batch with its
LeaderChange, as any new leader commits its predecessors' entries.

Why a record at the log's end and not a new snapshot or a new bootstrap checkpoint: a voter set
takes effect when its VotersRecord is appended, and the newest one in the log wins (Kafka's
KRaftControlRecordStateMachine, core/kraft_control.py); the older VotersRecords in the
snapshot and the log stay below it and can never override it. The log and the snapshot stay
byte for byte as they were, so nothing is re-encoded and every record keeps its offset. The new
epoch keeps Raft's log matching: no other replica can hold a different batch at the same
(offset, epoch), because no leader of epoch E ever existed; a replica that rejoins with an old
log is truncated back to the divergence by the usual Fetch DivergingEpoch answer.

Invariants: the batch is fsync'd before quorum-state names its epoch; the quorum-state epoch is
never below the log's last epoch (Kafka refuses to start otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from metaquorum.protocol.control_records import build_control_batch
from metaquorum.protocol.messages import KRaftVersionRecord, VotersRecord
from metaquorum.protocol.types import Uuid
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.quorum_state import QuorumStateFile, read_quorum_state, write_quorum_state


@dataclass(frozen=True, slots=True)
class ListenerAddress:
    name: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> ListenerAddress:
        name, sep, rest = text.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not name or not host or not port.isdigit():
            raise ValueError(
                f"bad endpoint {text!r}: use NAME://host:port, e.g. CONTROLLER://node-0:9093"
            )
        return cls(name, host.strip("[]"), int(port))


@dataclass(frozen=True, slots=True)
class ReformResult:
    start_offset: int  # the log start (a snapshot's end offset, or 0)
    end_offset: int  # the log end before the voters batch: every record below it is kept
    voters_offset: int  # where the new VotersRecord sits
    epoch: int


def single_voter(
    node_id: int, directory_id: Uuid, endpoints: Sequence[ListenerAddress]
) -> VotersRecord:
    return VotersRecord(
        version=0,
        voters=[
            VotersRecord.Voter(
                voter_id=node_id,
                voter_directory_id=directory_id,
                endpoints=[
                    VotersRecord.Endpoint(name=e.name, host=e.host, port=e.port) for e in endpoints
                ],
                kraft_version_feature=VotersRecord.KRaftVersionFeature(
                    min_supported_version=0, max_supported_version=1
                ),
            )
        ],
    )


def reform_single_voter(
    partition_dir: Path,
    voters: VotersRecord,
    *,
    now_ms: int,
    fsync: bool = True,
) -> ReformResult:
    log = MetadataLog.open(partition_dir, LogConfig(fsync=fsync))
    try:
        state = read_quorum_state(partition_dir)
        epoch = max(state.leader_epoch if state is not None else 0, log.last_fetched_epoch()) + 1
        start, end = log.log_start_offset, log.log_end_offset
        batch = build_control_batch(
            0, epoch, [KRaftVersionRecord(version=0, kraft_version=1), voters], timestamp_ms=now_ms
        )
        log.append_as_leader(batch, epoch)
        log.flush()
    finally:
        log.close()
    write_quorum_state(partition_dir, QuorumStateFile(leader_epoch=epoch), fsync=fsync)
    return ReformResult(start, end, end, epoch)

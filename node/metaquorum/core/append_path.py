"""The append path of `RaftNode` (Kafka's `KafkaRaftClient.appendBatch`,
`onUpdateLeaderHighWatermark`, `LeaderState.updateLocalState`, `createSnapshot`).

Role: a client append on the leader goes into the accumulator (linger, `leader.py` drains it);
entries the leader writes are appended to the in-memory log and handed to the runtime to append
and flush; a flush on the leader counts its durable end offset toward the HW; every step ends by
reporting what changed: a new voter set (`VotersChanged`), a new HW (`HighWatermarkAdvanced`,
voter-change commits, `AppendCommitted` for every client append below it); a snapshot of the
committed prefix replaces it on request.
Invariants: the leader counts only its flushed end offset (`Flushed`); `HighWatermarkAdvanced`
is emitted once per HW change and never goes backwards; an append is reported committed once,
in offset order; a VotersRecord the leader appends is in effect for its HW at once (KIP-853).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import fetch, voter_change
from metaquorum.core.batch_accumulator import PendingAppend
from metaquorum.core.effects import (
    AppendCommitted,
    AppendEntries,
    AppendFailed,
    FlushLog,
    HighWatermarkAdvanced,
    VotersChanged,
    WriteSnapshot,
)
from metaquorum.core.events import ClientAppend, CreateSnapshot
from metaquorum.core.log import LogEntry
from metaquorum.core.states import LeaderState

if TYPE_CHECKING:
    from metaquorum.core.node import RaftNode


def handle_client_append(node: RaftNode, event: ClientAppend) -> None:
    st = node.state
    if not isinstance(st, LeaderState) or node.shutting_down:
        node.emit(AppendFailed(event.append_id, "NOT_LEADER_OR_FOLLOWER"))
        return
    st.data.accumulator.append(PendingAppend(event.append_id, event.values), node.now_ms)


def append_as_leader(node: RaftNode, entries: list[LogEntry]) -> None:
    node.log.append(entries)
    progress = node.progress
    if progress is not None and progress.voters.keys() != node.voters.voter_ids:
        progress.set_voters(node.voters.voter_keys())  # a VotersRecord: in effect at once
    node.emit(AppendEntries(tuple(entries)))
    node.emit(FlushLog(node.log.end_offset))
    fetch.complete_purgatory(node)


def create_snapshot(node: RaftNode, event: CreateSnapshot) -> None:
    """The state machine's snapshot below `end_offset` (committed) replaces that prefix."""
    hw = node.high_watermark
    snap = node.log.snapshot
    done = 0 if snap is None else snap.snapshot_id.offset
    if hw is None or not done < event.end_offset <= min(hw, node.log.end_offset):
        return  # not committed (or not newer): refuse silently, as Kafka's createSnapshot
    node.emit(WriteSnapshot(node.log.create_snapshot(event.end_offset, event.payload)))


def handle_flushed(node: RaftNode, offset: int) -> None:
    node.log.mark_flushed(offset)
    if isinstance(node.state, LeaderState):
        leader_local_progress(node)


def leader_local_progress(node: RaftNode) -> None:
    """The leader's durable end offset counts toward the HW (never its unflushed tail)."""
    progress = node.progress
    assert progress is not None
    if progress.voters.keys() != node.voters.voter_ids:
        progress.set_voters(node.voters.voter_keys())  # Kafka's updateLocalState
    if progress.update_local(node.log.flushed_offset, node.now_ms):
        fetch.complete_purgatory(node)


def report_progress(node: RaftNode) -> None:
    voters = node.voters
    if voters is not node.reported_voters:
        if voters != node.reported_voters:
            node.emit(VotersChanged(voters))
        node.reported_voters = voters
    hw = node.high_watermark
    if hw is not None and hw > node.reported_hw:
        node.reported_hw = hw
        node.emit(HighWatermarkAdvanced(hw))
        voter_change.on_high_watermark(node)
        data = node.leader_data
        if data is not None and data.pending_appends:
            pending = data.pending_appends
            done = sorted((o, a) for a, o in pending.items() if o < hw)
            for last_offset, append_id in done:
                del pending[append_id]
                node.emit(AppendCommitted(append_id, last_offset))

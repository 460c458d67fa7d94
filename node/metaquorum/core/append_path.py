"""The append path of `RaftNode` (Kafka's `KafkaRaftClient.appendBatch`,
`onUpdateLeaderHighWatermark`, `LeaderState.updateLocalState`, `createSnapshot`).

Role: a client append on the leader goes into the accumulator (linger, `leader.py` drains it);
entries the leader writes are appended to the in-memory log and handed to the runtime to append
and flush; a flush on the leader counts its durable end offset toward the HW; when the node
reports a new HW (`RaftNode._report_progress`), every client append below it is committed
(`complete_appends`); a snapshot of the committed prefix replaces it on request.
Invariants: the leader counts only its flushed end offset (`Flushed`); `HighWatermarkAdvanced`
is emitted once per HW change and never goes backwards; an append is reported committed once,
in offset order; a VotersRecord the leader appends is in effect for its HW at once (KIP-853).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import fetch
from metaquorum.core.batch_accumulator import PendingAppend
from metaquorum.core.effects import (
    AppendCommitted,
    AppendEntries,
    AppendFailed,
    FlushLog,
    WriteSnapshot,
)
from metaquorum.core.events import ClientAppend, CreateSnapshot
from metaquorum.core.log import LogEntry
from metaquorum.core.states import LeaderState

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def handle_client_append(ctx: RaftContext, event: ClientAppend) -> None:
    st = ctx.state
    if not isinstance(st, LeaderState) or ctx.shutdown_started_ms is not None:
        ctx.emit(AppendFailed(event.append_id, "NOT_LEADER_OR_FOLLOWER"))
        return
    st.data.accumulator.append(PendingAppend(event.append_id, event.values), ctx.now_ms)


def append_as_leader(ctx: RaftContext, entries: list[LogEntry]) -> None:
    ctx.log.append(entries)
    st = ctx.state
    progress = st.data.progress if isinstance(st, LeaderState) else None
    if progress is not None and progress.voters.keys() != ctx.voters.voter_ids:
        progress.set_voters(ctx.voters.voter_keys())  # a VotersRecord: in effect at once
    ctx.emit(AppendEntries(tuple(entries)))
    ctx.emit(FlushLog(ctx.log.end_offset))
    fetch.complete_purgatory(ctx)


def create_snapshot(ctx: RaftContext, event: CreateSnapshot) -> None:
    """The state machine's snapshot below `end_offset` (committed) replaces that prefix."""
    hw = ctx.high_watermark
    snap = ctx.log.snapshot
    done = 0 if snap is None else snap.snapshot_id.offset
    if hw is None or not done < event.end_offset <= min(hw, ctx.log.end_offset):
        return  # not committed (or not newer): refuse silently, as Kafka's createSnapshot
    ctx.emit(WriteSnapshot(ctx.log.create_snapshot(event.end_offset, event.payload)))


def handle_flushed(ctx: RaftContext, offset: int) -> None:
    ctx.log.mark_flushed(offset)
    st = ctx.state
    if isinstance(st, LeaderState):
        leader_local_progress(ctx, st)


def leader_local_progress(ctx: RaftContext, st: LeaderState) -> None:
    """The leader's durable end offset counts toward the HW (never its unflushed tail)."""
    progress = st.data.progress
    if progress.voters.keys() != ctx.voters.voter_ids:
        progress.set_voters(ctx.voters.voter_keys())  # Kafka's updateLocalState
    if progress.update_local(ctx.log.flushed_offset, ctx.now_ms):
        fetch.complete_purgatory(ctx)


def complete_appends(ctx: RaftContext, hw: int) -> None:
    """`AppendCommitted` for every client append of this leader that ends below `hw`, in
    offset order (the node calls it once per HW change)."""
    st = ctx.state
    if isinstance(st, LeaderState) and st.data.pending_appends:
        pending = st.data.pending_appends
        done = sorted((o, a) for a, o in pending.items() if o < hw)
        for last_offset, append_id in done:
            del pending[append_id]
            ctx.emit(AppendCommitted(append_id, last_offset))

"""The leader's own duties each poll (Kafka's `pollLeader` and `LeaderState` timers).

Role: check-quorum (resign when a majority has not fetched within 1.5 x fetch.timeout.ms,
KAFKA-15489), draining the batch accumulator after `append.linger.ms` (or at once when the
log is idle: adaptive linger, metaquorum's own, `drain_due`), expiring parked fetches,
re-sending BeginQuorumEpoch, and the log hand-over before a graceful shutdown (the fetches that
restart the check-quorum window are counted in `check_quorum.py`). A poll that resigns returns
`POLL_AGAIN`: the node's one poll loop then polls the Resigned state.
Invariants: the check-quorum window restarts only when a majority of the *other* voters
(`len(voters) // 2`) fetched in it; a single-voter quorum never resigns by itself; appended
batches carry the leader's epoch and consecutive offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import begin_quorum_epoch, fetch, voter_change
from metaquorum.core.context import POLL_AGAIN, PollResult, min_deadline
from metaquorum.core.log import LogEntry
from metaquorum.core.states import LeaderState

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def poll_leader(ctx: RaftContext, st: LeaderState, now_ms: int) -> PollResult:
    voter_change.expire_pending_change(ctx)
    if now_ms >= st.check_quorum_deadline_ms or st.data.resign_requested:
        ctx.resign()
        return POLL_AGAIN
    if drain_due(ctx, st, now_ms):
        drain_accumulator(ctx, st)
    data = st.data
    expiry = data.purgatory.next_expiry_ms()
    if expiry is not None and expiry <= now_ms:
        fetch.complete_purgatory(ctx)
    deadline = begin_quorum_epoch.poll_leader(ctx)
    current = ctx.state
    assert isinstance(current, LeaderState)
    deadline = min(deadline, current.check_quorum_deadline_ms)
    change = data.pending_change
    expiry = None if change is None else change.expire_ms
    for d in (data.accumulator.drain_deadline_ms(), data.purgatory.next_expiry_ms(), expiry):
        if d is not None:
            deadline = min(deadline, d)
    return deadline


def poll_shutting_down_leader(ctx: RaftContext, st: LeaderState, now_ms: int) -> PollResult:
    """Graceful shutdown as a leadership transfer (Raft thesis §3.10): take no new appends
    (refused in `RaftNode`), write out the lingered ones at once, and resign when the most
    caught-up voter holds the whole log, so it wins its pre-vote and vote (a voter grants
    only to an up-to-date log). Bounded by `election.timeout.ms`: then it resigns anyway."""
    if len(st.data.accumulator) > 0:
        drain_accumulator(ctx, st)
    progress = st.data.progress
    end = ctx.log.end_offset
    caught_up = any(
        s.end_offset is not None and s.end_offset >= end
        for v, s in progress.voters.items()
        if v != ctx.local.id
    )
    assert ctx.shutdown_started_ms is not None
    bound = ctx.shutdown_started_ms + ctx.config.election_timeout_ms
    if caught_up or now_ms >= bound or len(ctx.voters) == 1:
        ctx.resign()
        return POLL_AGAIN
    return min_deadline(poll_leader(ctx, st, now_ms), bound)


def drain_due(ctx: RaftContext, st: LeaderState, now_ms: int) -> bool:
    """Linger expired or the batch is full; or (adaptive linger) the log is idle: everything
    appended is already flushed, so no fsync is running that a batch could join. Under load
    appends gather while the previous batch is being flushed (group commit); at low load an
    append goes out at once instead of waiting `append.linger.ms`."""
    acc = st.data.accumulator
    if acc.ready(now_ms):
        return True
    return (
        ctx.config.append_linger_adaptive != 0
        and len(acc) > 0
        and ctx.log.flushed_offset >= ctx.log.end_offset
    )


def drain_accumulator(ctx: RaftContext, st: LeaderState) -> None:
    """Turn lingered appends into log entries of this epoch; remember each append's end.
    The caller decided it is due (`drain_due`)."""
    for batch in st.data.accumulator.drain(ctx.now_ms, force=True):
        entries: list[LogEntry] = []
        base = ctx.log.end_offset
        for item in batch:
            for value in item.values:
                entries.append(LogEntry(base + len(entries), st.epoch, value))
            st.data.pending_appends[item.append_id] = base + len(entries) - 1
        ctx.append_as_leader(entries)

"""The leader's own duties each poll (Kafka's `pollLeader` and `LeaderState` timers).

Role: check-quorum (resign when a majority has not fetched within 1.5 x fetch.timeout.ms,
KAFKA-15489), draining the batch accumulator after `append.linger.ms` (or at once when the
log is idle: adaptive linger, metaquorum's own, `drain_due`), expiring parked fetches,
re-sending BeginQuorumEpoch, and the log hand-over before a graceful shutdown; plus
`update_check_quorum_for_following_voter`, called for every fetch from a voter.
Invariants: the check-quorum window restarts only when a majority of the *other* voters
(`len(voters) // 2`) fetched in it; a single-voter quorum never resigns by itself; appended
batches carry the leader's epoch and consecutive offsets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from metaquorum.core import begin_quorum_epoch, fetch, voter_change
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import LogEntry
from metaquorum.core.states import LeaderState

if TYPE_CHECKING:
    from metaquorum.core.node import RaftNode


def poll_leader(node: RaftNode, st: LeaderState, now_ms: int) -> int:
    voter_change.expire_pending_change(node)
    if now_ms >= st.check_quorum_deadline_ms or st.data.resign_requested:
        node.resign()
        return node.poll(now_ms)
    if drain_due(node, st, now_ms):
        drain_accumulator(node, st)
    data = st.data
    expiry = data.purgatory.next_expiry_ms()
    if expiry is not None and expiry <= now_ms:
        fetch.complete_purgatory(node)
    deadline = begin_quorum_epoch.poll_leader(node)
    current = node.state
    assert isinstance(current, LeaderState)
    deadline = min(deadline, current.check_quorum_deadline_ms)
    change = data.pending_change
    expiry = None if change is None else change.expire_ms
    for d in (data.accumulator.drain_deadline_ms(), data.purgatory.next_expiry_ms(), expiry):
        if d is not None:
            deadline = min(deadline, d)
    return deadline


def poll_shutting_down_leader(node: RaftNode, st: LeaderState, now_ms: int) -> int:
    """Graceful shutdown as a leadership transfer (Raft thesis §3.10): take no new appends
    (refused in `RaftNode`), write out the lingered ones at once, and resign when the most
    caught-up voter holds the whole log, so it wins its pre-vote and vote (a voter grants
    only to an up-to-date log). Bounded by `election.timeout.ms`: then it resigns anyway."""
    if len(st.data.accumulator) > 0:
        drain_accumulator(node, st)
    progress = st.data.progress
    end = node.log.end_offset
    caught_up = any(
        s.end_offset is not None and s.end_offset >= end
        for v, s in progress.voters.items()
        if v != node.local_id
    )
    bound = node.shutdown_started_ms + node.config.election_timeout_ms
    if caught_up or now_ms >= bound or len(node.voters) == 1:
        node.resign()
        return node.poll(now_ms)
    return min(poll_leader(node, st, now_ms), bound)


def drain_due(node: RaftNode, st: LeaderState, now_ms: int) -> bool:
    """Linger expired or the batch is full; or (adaptive linger) the log is idle: everything
    appended is already flushed, so no fsync is running that a batch could join. Under load
    appends gather while the previous batch is being flushed (group commit); at low load an
    append goes out at once instead of waiting `append.linger.ms`."""
    acc = st.data.accumulator
    if acc.ready(now_ms):
        return True
    return (
        node.config.append_linger_adaptive != 0
        and len(acc) > 0
        and node.log.flushed_offset >= node.log.end_offset
    )


def drain_accumulator(node: RaftNode, st: LeaderState) -> None:
    """Turn lingered appends into log entries of this epoch; remember each append's end.
    The caller decided it is due (`drain_due`)."""
    for batch in st.data.accumulator.drain(node.now_ms, force=True):
        entries: list[LogEntry] = []
        base = node.log.end_offset
        for item in batch:
            for value in item.values:
                entries.append(LogEntry(base + len(entries), st.epoch, value))
            st.data.pending_appends[item.append_id] = base + len(entries) - 1
        node.append_as_leader(entries)


def update_check_quorum_for_following_voter(node: RaftNode, key: ReplicaKey) -> None:
    """Kafka's `LeaderState.updateCheckQuorumForFollowingVoter` (a voter by its key)."""
    st = node.state
    replica_id = key.id
    if not isinstance(st, LeaderState) or not node.voters.is_voter(key):
        return
    if replica_id == node.local_id:
        return
    fetched = st.data.fetched_voters
    fetched.add(replica_id)
    # A majority of the voters; the leader counts itself only while it is one (a leader
    # removing itself keeps leading on the other voters' fetches alone, as Kafka).
    majority = len(node.voters) // 2 + 1 - (node.local_id in node.voters)
    if len(fetched) >= majority:
        fetched.clear()
        deadline = node.now_ms + node.config.check_quorum_timeout_ms
        node.update_state(replace(st, check_quorum_deadline_ms=deadline))

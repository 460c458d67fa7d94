"""Check-quorum bookkeeping on the leader (Kafka's
`LeaderState.updateCheckQuorumForFollowingVoter`): every validated fetch from a voter counts
toward the current check-quorum window.

Role: the window restarts (the leader's `check_quorum_deadline_ms` moves 1.5 x fetch.timeout.ms
ahead, KAFKA-15489) once a majority of the voters fetched in it; `leader.poll_leader` resigns
when the deadline passes first. Called by `fetch` (Fetch) and `fetch_snapshot` (FetchSnapshot).
Invariants: only voters by key count, never the leader itself; the leader counts itself toward
the majority only while it is a voter (a leader removing itself keeps leading on the other
voters' fetches alone, as Kafka).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.states import LeaderState
from metaquorum.core.value import replace

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext
    from metaquorum.core.ids import ReplicaKey


def update_check_quorum_for_following_voter(ctx: RaftContext, key: ReplicaKey) -> None:
    """Kafka's `LeaderState.updateCheckQuorumForFollowingVoter` (a voter by its key)."""
    st = ctx.state
    replica_id = key.id
    if not isinstance(st, LeaderState) or not ctx.voters.is_voter(key):
        return
    if replica_id == ctx.local.id:
        return
    fetched = st.data.fetched_voters
    fetched.add(replica_id)
    # A majority of the voters; the leader counts itself only while it is one (a leader
    # removing itself keeps leading on the other voters' fetches alone, as Kafka).
    majority = len(ctx.voters) // 2 + 1 - (ctx.local.id in ctx.voters)
    if len(fetched) >= majority:
        fetched.clear()
        deadline = ctx.now_ms + ctx.config.check_quorum_timeout_ms
        ctx.update_state(replace(st, check_quorum_deadline_ms=deadline))

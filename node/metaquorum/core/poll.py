"""Start-up state and the per-state poll (Kafka's `QuorumState.initialize`, `pollCurrentState`).

Role: pick the state a replica restarts in from its persisted `ElectionState` and its log, and
on every step let the current state act on its deadlines (election, fetch, check-quorum,
backoff, linger) and send what is due; return the next deadline.
Invariants: a replica restarting as the recorded leader comes back Resigned (it must not lead
without a new election); one that had voted for itself resumes as Candidate of that epoch; an epoch
older than the log's last epoch is never resumed; observers never campaign; a replica shutting
down never starts an election (a leader resigns and stays Resigned), as Kafka's GracefulShutdown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import end_quorum_epoch, fetch, leader, vote
from metaquorum.core.context import POLL_AGAIN, PollResult, random_election_timeout_ms
from metaquorum.core.states import (
    CandidateState,
    ElectionState,
    EpochState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
)
from metaquorum.core.value import replace
from metaquorum.core.vote_tally import VoteTally

NEVER = 2**62

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def initial_state(ctx: RaftContext, election: ElectionState, now_ms: int) -> EpochState:
    """Kafka's `QuorumState.initialize` from `quorum-state` and the log."""
    deadline = now_ms + random_election_timeout_ms(ctx)
    if election.epoch < ctx.log.last_fetched_epoch:
        return UnattachedState(ctx.log.last_fetched_epoch, deadline)
    if election.leader_id == ctx.local.id:
        others = ctx.voters.voter_ids - {ctx.local.id}
        return ResignedState(election.epoch, deadline, frozenset(others), ())
    voted = election.voted_key
    if voted is not None and voted.id == ctx.local.id and ctx.is_voter:
        # Kafka 4.3: it voted for itself, so it was a Candidate of that epoch and resumes as one.
        tally = VoteTally.start(ctx.voters.voter_ids, ctx.local.id)
        return CandidateState(election.epoch, deadline, tally)
    if election.leader_id >= 0:
        fetch_deadline = now_ms + ctx.config.fetch_timeout_ms
        return FollowerState(election.epoch, election.leader_id, fetch_deadline, voted)
    return UnattachedState(election.epoch, deadline, voted_key=voted)


def poll_current_state(ctx: RaftContext, now_ms: int) -> PollResult:
    """The current state's poll: the next deadline, or `POLL_AGAIN` after a transition."""
    st = ctx.state
    down = (
        ctx.shutdown_started_ms is not None
    )  # Kafka's GracefulShutdown: no state starts a new election
    if isinstance(st, LeaderState):
        if down:
            return leader.poll_shutting_down_leader(ctx, st, now_ms)
        return leader.poll_leader(ctx, st, now_ms)
    if isinstance(st, CandidateState):
        return vote.poll_candidate(ctx, st, now_ms)
    if isinstance(st, ProspectiveState):
        return vote.poll_prospective(ctx, st, now_ms)
    if isinstance(st, FollowerState):
        if ctx.is_voter and now_ms >= st.fetch_deadline_ms:
            if not down:
                ctx.transition_to_prospective()
                return POLL_AGAIN
            # Shutting down: the expired fetch timer no longer matters (nor wakes us).
            return fetch.poll_follower(ctx, replace(st, fetch_deadline_ms=NEVER), now_ms)
        return fetch.poll_follower(ctx, st, now_ms)
    if isinstance(st, ResignedState):
        if down:  # stay Resigned until an election bumps the epoch
            return end_quorum_epoch.poll_resigned(ctx, st, now_ms)
        if now_ms >= st.election_deadline_ms:
            ctx.transition_to_unattached(st.epoch + 1)
            return POLL_AGAIN
        return min(st.election_deadline_ms, end_quorum_epoch.poll_resigned(ctx, st, now_ms))
    if not ctx.is_voter or down:
        return fetch.poll_unattached(ctx, st, now_ms)
    if now_ms >= st.election_deadline_ms:
        ctx.transition_to_prospective()
        return POLL_AGAIN
    return min(st.election_deadline_ms, fetch.poll_unattached(ctx, st, now_ms))

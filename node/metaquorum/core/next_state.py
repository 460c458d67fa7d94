"""The state each transition leads to (Kafka 4.3 `QuorumState.transitionTo*`), built from a
`RaftContext`: pure functions, no effects; `RaftNode` passes their result to its gate.

Role: which timers, votes, tallies and HW a new state starts with. Kafka's rules: Unattached
keeps the remaining election timer when coming from Unattached, Candidate, Prospective (pre-vote
not rejected) or Resigned, and a vote cast in the same epoch; a Follower keeps the vote of its
epoch and the leader's endpoint; Prospective and Candidate count retries and start a fresh
tally and a randomised election timer; a Resigned leader lists its successors by offset.
Invariants: every builder reads the current state and the log but changes neither; the gate
(`transitions.check_transition`) decides whether the result is legal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import discovery
from metaquorum.core.context import NEVER, random_election_timeout_ms
from metaquorum.core.leader_data import LeaderData
from metaquorum.core.states import (
    CandidateState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
)
from metaquorum.core.vote_tally import VoteTally

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext
    from metaquorum.core.voter_set import ListenerEndpoint


def unattached(ctx: RaftContext, epoch: int, leader_id: int | None) -> UnattachedState:
    """Kafka 4.3 `QuorumState.transitionToUnattached`: the remaining election timer is kept
    when coming from Unattached, Candidate, Prospective (pre-vote not rejected) or Resigned
    (a newer epoch must not postpone an election already due); a vote cast in this epoch
    is kept (Prospective -> Unattached in the same epoch)."""
    st = ctx.state
    keeps_timer = isinstance(st, UnattachedState | CandidateState | ResignedState) or (
        isinstance(st, ProspectiveState) and not st.tally.is_rejected
    )
    if keeps_timer:
        assert not isinstance(st, LeaderState | FollowerState)
        deadline = max(st.election_deadline_ms, ctx.now_ms)
    else:
        deadline = ctx.now_ms + random_election_timeout_ms(ctx)
    voted = st.election(ctx.local.id).voted_key if epoch == st.epoch else None
    hw = ctx.high_watermark
    return UnattachedState(epoch, deadline, voted_key=voted, leader_id=leader_id, high_watermark=hw)


def follower(
    ctx: RaftContext, epoch: int, leader_id: int, endpoint: ListenerEndpoint | None
) -> FollowerState:
    st = ctx.state
    voted = st.election(ctx.local.id).voted_key if epoch == st.epoch else None
    deadline = ctx.now_ms + ctx.config.fetch_timeout_ms
    # Kafka's FollowerState keeps the leader's endpoints: a leader that removes itself
    # stays reachable after the uncommitted set without it reaches this replica.
    endpoint = endpoint or discovery.endpoint_of(ctx, leader_id)
    return FollowerState(
        epoch,
        leader_id,
        deadline,
        voted,
        high_watermark=ctx.high_watermark,
        leader_endpoint=endpoint,
    )


def prospective(ctx: RaftContext) -> ProspectiveState:
    st = ctx.state
    election = st.election(ctx.local.id)
    leader = election.leader_id if election.leader_id >= 0 else None
    retries = st.retries + 1 if isinstance(st, CandidateState) else 1
    tally = VoteTally.start(ctx.voters.voter_ids, ctx.local.id)
    deadline = ctx.now_ms + random_election_timeout_ms(ctx)
    hw = ctx.high_watermark
    return ProspectiveState(
        st.epoch, deadline, tally, election.voted_key, leader, retries, high_watermark=hw
    )


def candidate(ctx: RaftContext) -> CandidateState:
    st = ctx.state
    retries = st.retries if isinstance(st, ProspectiveState) else 1
    tally = VoteTally.start(ctx.voters.voter_ids, ctx.local.id)
    deadline = ctx.now_ms + random_election_timeout_ms(ctx)
    return CandidateState(st.epoch + 1, deadline, tally, retries, high_watermark=ctx.high_watermark)


def leader(ctx: RaftContext) -> LeaderState:
    """Candidate -> Leader: a new term's data (progress from the log's end, the batch
    accumulator, the purgatory) and the check-quorum timer (never, for the only voter)."""
    st = ctx.state
    assert isinstance(st, CandidateState)
    start = ctx.log.end_offset
    single = len(ctx.voters) <= 1
    cq = NEVER if single else ctx.now_ms + ctx.config.check_quorum_timeout_ms
    data = LeaderData(ctx.local.id, ctx.voters.voter_keys(), start, ctx.config)
    if ctx.control.latest_kraft_version() < 1:
        # KIP-853 upgrade: the leader's own entry now, the others' from UpdateRaftVoter.
        local = ctx.voters.update_voter_ignoring_directory_id(ctx.local.voter_node())
        data.volatile_voters = local or ctx.voters
    return LeaderState(st.epoch, start, st.tally.granted, cq, ctx.now_ms, data)


def resigned(ctx: RaftContext) -> ResignedState:
    """Leader -> Resigned (check-quorum expiry, a removed leader, graceful shutdown)."""
    st = ctx.state
    assert isinstance(st, LeaderState)
    successors = tuple(st.data.progress.voters_by_descending_offset())
    deadline = ctx.now_ms + random_election_timeout_ms(ctx)
    hw = ctx.high_watermark
    return ResignedState(st.epoch, deadline, frozenset(successors), successors, hw)

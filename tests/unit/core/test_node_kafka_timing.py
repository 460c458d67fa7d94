"""Kafka 4.3 retry and election timing (issue 12), each against `QuorumState` /
`KafkaRaftClient` of the 4.3 branch; every test here fails on the code before the fix.
"""

from __future__ import annotations

from dataclasses import replace

from metaquorum.core.config import QuorumConfig
from metaquorum.core.effects import SendRequest
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.states import (
    CandidateState,
    ElectionState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    UnattachedState,
)
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    FetchRequestData,
    VoteRequestData,
    VoteResponseData,
)

from tests.unit.core.context import (
    RaftTestContext,
    entries,
    fetch_response,
    vote_request,
    vote_response,
)


def _sent_to(ctx: RaftTestContext, dest: int, kind: type) -> list[SendRequest]:
    return [s for s in ctx.sent(kind) if s.destination == dest]


# --- top-level errors back off (KafkaRaftClient.handleTopLevelError) ------------------------
def test_top_level_error_response_waits_the_retry_backoff() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], config=QuorumConfig(retry_backoff_ms=100))
    ctx.advance_to_deadline()  # Prospective: pre-votes to 2 and 3
    assert isinstance(ctx.node.state, ProspectiveState)
    ctx.respond(2, VoteResponseData(error_code=int(Errors.INCONSISTENT_CLUSTER_ID)))
    assert _sent_to(ctx, 2, VoteRequestData) == []  # not re-sent on the reply
    ctx.advance(50)
    assert _sent_to(ctx, 2, VoteRequestData) == []
    ctx.advance(50)
    assert len(_sent_to(ctx, 2, VoteRequestData)) == 1  # after retry.backoff.ms


def test_fetch_top_level_error_backs_off_too() -> None:
    ctx = RaftTestContext(
        1,
        [1, 2, 3],
        election=ElectionState(2, 3, None),
        config=QuorumConfig(retry_backoff_ms=100),
    )
    assert len(_sent_to(ctx, 3, FetchRequestData)) == 1
    bad = replace(fetch_response(3, 2), error_code=int(Errors.INCONSISTENT_CLUSTER_ID))
    ctx.respond(3, bad)
    assert _sent_to(ctx, 3, FetchRequestData) == []
    ctx.advance(99)
    assert _sent_to(ctx, 3, FetchRequestData) == []
    ctx.advance(1)
    assert len(_sent_to(ctx, 3, FetchRequestData)) == 1


def test_unsupported_version_pre_vote_goes_on_to_candidate() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    assert isinstance(ctx.node.state, ProspectiveState)
    ctx.respond(2, VoteResponseData(error_code=int(Errors.UNSUPPORTED_VERSION)))
    assert isinstance(ctx.node.state, CandidateState) and ctx.node.epoch == 1


# --- QuorumState.initialize and the one-voter start -----------------------------------------
def test_restart_after_voting_for_itself_resumes_as_candidate() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(4, -1, ReplicaKey(1)))
    st = ctx.node.state
    assert isinstance(st, CandidateState) and st.epoch == 4
    assert {s.destination for s in ctx.sent(VoteRequestData)} == {2, 3}
    assert not ctx.sent(VoteRequestData)[0].message.topics[0].partitions[0].pre_vote


def test_one_voter_leads_at_once_on_start_and_restart() -> None:
    fresh = RaftTestContext(1, [1])
    assert isinstance(fresh.node.state, LeaderState) and fresh.node.epoch == 1
    for election in (
        ElectionState(3, 1, None),  # it led epoch 3 (comes back Resigned, then leads 4)
        ElectionState(3, -1, ReplicaKey(1)),  # a candidate of 3
        ElectionState(3, -1, None),
    ):
        ctx = RaftTestContext(1, [1], election=election, epochs=[1, 3])
        st = ctx.node.state
        assert isinstance(st, LeaderState), (election, st)
        assert st.epoch == (3 if election.voted_key else 4)
        assert ctx.now == 0  # no election timeout waited


# --- transitionToUnattached keeps the remaining election timer ------------------------------
def test_higher_epoch_keeps_the_remaining_timer_from_unattached_and_candidate() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    timer = ctx.node.state.election_deadline_ms  # type: ignore[union-attr]
    ctx.advance(100)
    ctx.request(2, vote_request(6, 2, 0, 0))  # stale log: refused, epoch 6 adopted
    st = ctx.node.state
    assert isinstance(st, UnattachedState) and st.epoch == 6
    assert st.election_deadline_ms == timer  # not a fresh random timeout

    cand = RaftTestContext(1, [1, 2, 3], election=ElectionState(4, -1, ReplicaKey(1)))
    assert isinstance(cand.node.state, CandidateState)
    timer = cand.node.state.election_deadline_ms
    cand.advance(100)
    cand.request(2, vote_request(7, 2, 0, 0))  # granted (log up to date): the vote resets it
    assert cand.node.state.election_deadline_ms != timer  # type: ignore[union-attr]
    cand2 = RaftTestContext(1, [1, 2, 3], election=ElectionState(4, -1, ReplicaKey(1)), epochs=[4])
    timer = cand2.node.state.election_deadline_ms  # type: ignore[union-attr]
    cand2.advance(100)
    cand2.request(2, vote_request(7, 2, 3, 0))  # stale: refused, epoch 7 adopted
    st = cand2.node.state
    assert isinstance(st, UnattachedState) and st.epoch == 7
    assert st.election_deadline_ms == timer


def test_follower_moving_to_a_higher_epoch_draws_a_new_timer() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None), epochs=[2, 2])
    ctx.advance(10)
    ctx.request(2, vote_request(3, 2, 1, 0))  # stale log: refused, epoch 3 adopted
    st = ctx.node.state
    assert isinstance(st, UnattachedState) and st.epoch == 3
    t = ctx.node.config.election_timeout_ms
    assert ctx.now + t <= st.election_deadline_ms < ctx.now + 2 * t


def test_prospective_pre_vote_timeout_retries_at_once() -> None:
    """Kafka: a Prospective whose pre-vote timed out (not rejected) becomes Unattached with
    its expired timer, so the next pre-vote round starts in the same poll."""
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    first = ctx.node.state
    assert isinstance(first, ProspectiveState)
    ctx.advance_to_deadline()  # no answers: timed out
    st = ctx.node.state
    assert isinstance(st, ProspectiveState) and st.election_deadline_ms > first.election_deadline_ms
    assert {s.destination for s in ctx.sent(VoteRequestData)} == {2, 3}


def test_rejected_pre_vote_draws_a_new_timer() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, False))
    ctx.respond(3, vote_response(0, False))
    st = ctx.node.state
    assert isinstance(st, UnattachedState)
    assert st.election_deadline_ms >= ctx.now + ctx.node.config.election_timeout_ms


# --- a Prospective that grants a vote stays Prospective -------------------------------------
def test_prospective_granting_a_vote_stays_prospective() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(1, -1, None))
    ctx.advance_to_deadline()
    assert isinstance(ctx.node.state, ProspectiveState) and ctx.node.epoch == 1
    ctx.request(2, vote_request(1, 2, 0, 0))
    st = ctx.node.state
    assert isinstance(st, ProspectiveState) and st.voted_key == ReplicaKey(2)
    assert ctx.persisted() == [ElectionState(1, -1, ReplicaKey(2))]
    assert ctx.kinds()[0] == "PersistElectionState"  # durable before the reply


# --- a response naming the leader of this epoch is processed after the transition -----------
def test_fetch_response_naming_the_leader_is_appended_in_the_same_round_trip() -> None:
    ctx = RaftTestContext(4, [1, 2, 3], election=ElectionState(2, -1, None), epochs=[1, 1])
    assert isinstance(ctx.node.state, UnattachedState)  # an observer that knows no leader
    fetches = ctx.sent(FetchRequestData)
    assert len(fetches) == 1
    src = fetches[0].destination  # it happens to be the leader: it answers with records
    ctx.respond(src, fetch_response(src, 2, hw=3), entries(2, [2]))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.leader_id == src
    assert [e.offset for e in ctx.appended()] == [2]

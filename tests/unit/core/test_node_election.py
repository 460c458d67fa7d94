"""Single-node tests of elections: every state, its timers and the vote-granting rules."""

from __future__ import annotations

from metaquorum.core.config import QuorumConfig
from metaquorum.core.effects import AppendFailed, PersistElectionState, SendResponse
from metaquorum.core.end_quorum_epoch import strict_exponential_election_backoff_ms
from metaquorum.core.events import Resign, Shutdown
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.states import (
    CandidateState,
    ElectionState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
)
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    BeginQuorumEpochRequestData,
    EndQuorumEpochRequestData,
    VoteRequestData,
    VoteResponseData,
)

from tests.unit.core.context import (
    RaftTestContext,
    begin_epoch,
    end_epoch,
    fetch_request,
    fetch_response,
    leader_change,
    vote_request,
    vote_response,
    voted,
)


def granted(ctx: RaftTestContext) -> bool:
    msg = ctx.response().message
    assert isinstance(msg, VoteResponseData)
    return msg.topics[0].partitions[0].vote_granted


def vote_error(ctx: RaftTestContext) -> int:
    msg = ctx.response().message
    assert isinstance(msg, VoteResponseData)
    return msg.error_code or msg.topics[0].partitions[0].error_code


# --- Unattached -----------------------------------------------------------------------------
def test_unattached_times_out_within_jittered_election_timeout_into_prospective() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    assert isinstance(ctx.node.state, UnattachedState)
    assert 1000 <= ctx.deadline < 2000  # election.timeout.ms + random(election.timeout.ms)
    ctx.advance_to_deadline()
    assert isinstance(ctx.node.state, ProspectiveState) and ctx.node.epoch == 0
    pre_votes = ctx.sent(VoteRequestData)
    assert sorted(s.destination for s in pre_votes) == [2, 3]
    assert all(s.message.topics[0].partitions[0].pre_vote for s in pre_votes)
    assert ctx.persisted() == []  # a pre-vote changes nothing durable


def test_observer_never_campaigns() -> None:
    ctx = RaftTestContext(4, [1, 2, 3])
    ctx.advance(10_000)
    assert isinstance(ctx.node.state, UnattachedState)
    assert not ctx.sent(VoteRequestData)


def test_unattached_grants_an_up_to_date_candidate_and_persists_first() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.request(2, vote_request(2, 2, last_epoch=1, last_offset=2))
    assert granted(ctx)
    kinds = ctx.kinds()
    assert kinds.index("PersistElectionState") < kinds.index("SendResponse")
    assert ctx.persisted()[-1] == voted(2, 2)


def test_unattached_rejects_a_stale_log() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1, 2])
    ctx.request(2, vote_request(3, 2, last_epoch=1, last_offset=5))
    assert not granted(ctx)
    ctx.request(3, vote_request(3, 3, last_epoch=2, last_offset=2))
    assert not granted(ctx)  # same epoch, shorter log


def test_voted_replica_keeps_its_single_vote() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=voted(5, 2))
    ctx.request(3, vote_request(5, 3))
    assert not granted(ctx)
    ctx.request(2, vote_request(5, 2))
    assert granted(ctx)  # the same candidate again: yes
    assert ctx.persisted() == []


def test_pre_vote_grant_is_not_persisted_and_needs_an_up_to_date_log() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=voted(5, 2), epochs=[5])
    ctx.request(3, vote_request(5, 3, last_epoch=5, last_offset=1, pre_vote=True))
    assert granted(ctx) and ctx.persisted() == []
    ctx.request(3, vote_request(5, 3, last_epoch=4, last_offset=9, pre_vote=True))
    assert not granted(ctx)


def test_higher_epoch_vote_request_moves_to_unattached_at_that_epoch() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(3, 2, None))
    assert isinstance(ctx.node.state, FollowerState)
    ctx.request(3, vote_request(7, 3))
    assert ctx.node.epoch == 7 and granted(ctx)
    assert isinstance(ctx.node.state, UnattachedState) and ctx.node.state.voted_key == ReplicaKey(3)


def test_vote_request_validation() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(4))
    ctx.request(2, vote_request(4, 2, cluster_id="other"))
    assert vote_error(ctx) == Errors.INCONSISTENT_CLUSTER_ID
    ctx.request(2, vote_request(5, 2, last_epoch=5))  # last epoch must be < epoch for a vote
    assert vote_error(ctx) == Errors.INVALID_REQUEST
    ctx.request(
        2, vote_request(5, 2, last_epoch=5, pre_vote=True)
    )  # but may equal it for a pre-vote
    assert vote_error(ctx) == 0
    ctx.request(2, vote_request(3, 2))
    assert vote_error(ctx) == Errors.FENCED_LEADER_EPOCH
    ctx.request(2, vote_request(6, 2, voter_id=9))
    assert vote_error(ctx) == Errors.INVALID_VOTER_KEY


# --- Prospective ----------------------------------------------------------------------------
def test_prospective_majority_becomes_candidate_at_the_next_epoch() -> None:
    ctx = RaftTestContext(1, [1, 2, 3, 4, 5])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, True))
    assert isinstance(ctx.node.state, ProspectiveState)
    ctx.respond(3, vote_response(0, True))
    assert isinstance(ctx.node.state, CandidateState) and ctx.node.epoch == 1
    assert ctx.persisted() == [voted(1, 1)]
    votes = ctx.sent(VoteRequestData)
    assert votes and not any(v.message.topics[0].partitions[0].pre_vote for v in votes)


def test_prospective_rejected_goes_back_to_unattached_or_its_leader() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, False))
    ctx.respond(3, vote_response(0, False))
    assert isinstance(ctx.node.state, UnattachedState) and ctx.node.epoch == 0

    follower = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    follower.advance(2000)  # fetch timeout
    assert isinstance(follower.node.state, ProspectiveState)
    follower.respond(2, vote_response(2, False, leader=3))
    follower.advance(2000)  # pre-vote times out: back to the known leader
    assert isinstance(follower.node.state, FollowerState) and follower.node.state.leader_id == 3


def test_single_voter_elects_itself_and_commits_after_flush() -> None:
    ctx = RaftTestContext(1, [1])
    st = ctx.node.state  # at once on start (Kafka's initialize), no election timeout
    assert isinstance(st, LeaderState) and st.epoch == 1
    # value: the leader, every current voter, the granting voters
    assert ctx.appended() == [leader_change(0, 1, 1, [1], [1])]
    assert ctx.hw_reports() == []  # nothing is committed before the flush
    ctx.flush()
    assert ctx.hw_reports() == [1]


# --- Candidate ------------------------------------------------------------------------------
def test_candidate_wins_with_a_majority_and_writes_leader_change() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()
    st = ctx.node.state
    assert isinstance(st, LeaderState) and st.epoch == 2 and st.epoch_start_offset == 2
    assert ctx.node.log.entry(2).kind.name == "LEADER_CHANGE"
    # Kafka's LeaderChangeMessage: Voters = all current voters, GrantingVoters = the majority
    # that voted (the leader and the first voter that granted).
    assert ctx.node.log.entry(2) == leader_change(2, ctx.node.epoch, 1, [1, 2, 3], [1, 2])


def test_candidate_grants_only_pre_votes() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, True))
    assert isinstance(ctx.node.state, CandidateState)
    ctx.request(3, vote_request(1, 3))
    assert not granted(ctx)
    ctx.request(3, vote_request(1, 3, 1, 1, pre_vote=True))  # a longer log than ours
    assert granted(ctx)
    ctx.request(3, vote_request(1, 3, pre_vote=True))  # as long as ours, from a higher id
    assert not granted(ctx)


# --- split-vote avoidance among campaigning replicas (pre-votes only) ------------------------
def test_prospectives_with_equal_logs_grant_pre_votes_to_the_lower_id_only() -> None:
    low = RaftTestContext(1, [1, 2, 3])
    low.advance_to_deadline()
    assert isinstance(low.node.state, ProspectiveState)
    low.request(2, vote_request(0, 2, pre_vote=True))  # a pre-vote carries its current epoch
    assert not granted(low)  # 2 > 1
    low.request(2, vote_request(0, 2, 0, 1, pre_vote=True))  # 2 holds one more record
    assert granted(low)
    high = RaftTestContext(3, [1, 2, 3])
    high.advance_to_deadline()
    assert isinstance(high.node.state, ProspectiveState)
    high.request(2, vote_request(0, 2, pre_vote=True))
    assert granted(high)  # 2 < 3


def test_a_prospective_asks_again_a_voter_that_rejected_it_and_now_campaigns() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    ctx.advance(2000)  # fetch timeout: Prospective, pre-votes to 2 and 3
    assert isinstance(ctx.node.state, ProspectiveState)
    ctx.respond(2, vote_response(2, False, leader=3))  # 2 still follows 3
    assert ctx.node.state.tally.rejected == frozenset({2})
    ctx.request(2, vote_request(2, 2, pre_vote=True))  # now 2 campaigns itself
    assert not granted(ctx)  # equal logs, 2 > 1
    assert [s.destination for s in ctx.sent(VoteRequestData)] == [2]  # asked again
    ctx.respond(2, vote_response(2, True))
    assert isinstance(ctx.node.state, CandidateState) and ctx.node.epoch == 3


def test_a_prospective_asks_again_when_the_rejection_arrives_after_the_campaign() -> None:
    # The other order of the same race (bench, SIGKILL of the leader: both followers' fetch
    # timeouts expire within a millisecond; 2's pre-vote reached 3 while 3 still followed, 3's
    # own pre-vote reached 2 before 3's rejection did). Without a second ask neither had a
    # majority: both waited out their election timeout, went back to the dead leader and its
    # fetch timeout, and the failover took 5.3 s instead of 2.0 s.
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    ctx.advance(2000)  # fetch timeout: Prospective, pre-votes to 2 and 3
    assert isinstance(ctx.node.state, ProspectiveState)
    ctx.request(2, vote_request(2, 2, pre_vote=True))  # 2 campaigns too
    assert not granted(ctx)  # equal logs, 2 > 1
    ctx.sent(VoteRequestData)
    ctx.respond(2, vote_response(2, False, leader=3))  # its answer, given while it followed 3
    assert isinstance(ctx.node.state, ProspectiveState)
    assert ctx.node.state.tally.rejected == frozenset()
    assert [s.destination for s in ctx.sent(VoteRequestData)] == [2]  # asked again
    ctx.respond(2, vote_response(2, False, leader=3))  # a second no counts: asked once only
    assert ctx.node.state.tally.rejected == frozenset({2})
    assert ctx.sent(VoteRequestData) == []


def test_a_prospective_asks_a_campaigning_voter_again_once() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    ctx.advance(2000)
    ctx.respond(2, vote_response(2, False, leader=3))
    ctx.request(2, vote_request(2, 2, pre_vote=True))  # asked again (the test above this one)
    assert [s.destination for s in ctx.sent(VoteRequestData)] == [2]
    ctx.respond(2, vote_response(2, False, leader=3))
    ctx.request(2, vote_request(2, 2, pre_vote=True))  # its retry: no third ask
    assert isinstance(ctx.node.state, ProspectiveState)
    assert ctx.node.state.tally.rejected == frozenset({2})
    assert ctx.sent(VoteRequestData) == []


def test_rejected_candidate_waits_its_election_timeout_then_returns_to_prospective() -> None:
    # Kafka 4.3 `maybeHandleElectionLoss`: no binary backoff, the election timeout is the wait.
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, True))
    st = ctx.node.state
    assert isinstance(st, CandidateState)
    deadline = st.election_deadline_ms
    assert 1000 <= deadline - ctx.now < 2000  # election.timeout.ms + jitter
    ctx.respond(2, vote_response(1, False))
    ctx.respond(3, vote_response(1, False))
    assert ctx.deadline == deadline and isinstance(ctx.node.state, CandidateState)
    ctx.advance(deadline - ctx.now - 1)
    assert isinstance(ctx.node.state, CandidateState)
    ctx.advance(1)
    assert isinstance(ctx.node.state, ProspectiveState) and ctx.node.epoch == 1
    assert ctx.node.state.voted_key == ReplicaKey(1)  # its own vote of epoch 1 is kept


def test_candidate_discovering_the_winner_of_its_epoch_follows_it() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, True))
    ctx.request(3, begin_epoch(3, 1))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.leader_id == 3 and st.voted_key == ReplicaKey(1)


# --- Leader ---------------------------------------------------------------------------------
def test_leader_rejects_votes_and_sends_begin_quorum_epoch() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, True))
    ctx.respond(2, vote_response(1, True))
    bqe = ctx.sent(BeginQuorumEpochRequestData)
    assert sorted(s.destination for s in bqe) == [2, 3]
    ctx.request(3, vote_request(1, 3, pre_vote=True))
    assert not granted(ctx)
    ctx.request(3, vote_request(1, 3, 1, 1, pre_vote=True))  # even with an up-to-date log
    assert not granted(ctx)
    ctx.request(3, vote_request(1, 3, 1, 5, pre_vote=True))  # or a longer one
    assert not granted(ctx) and isinstance(ctx.node.state, LeaderState)


def test_leader_resigns_when_a_majority_stops_fetching() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.become_leader()
    ctx.advance(3000)  # 1.5 x fetch.timeout.ms with no fetch
    st = ctx.node.state
    assert isinstance(st, ResignedState)
    eqe = ctx.sent(EndQuorumEpochRequestData)
    assert sorted(s.destination for s in eqe) == [2, 3]


def test_restarted_leader_comes_back_resigned_and_then_unattached() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(4, 1, ReplicaKey(1)), epochs=[4])
    assert isinstance(ctx.node.state, ResignedState)
    ctx.advance(2000)
    # Kafka: Unattached(5) keeps the Resigned state's (expired) timer, so the pre-vote starts
    # in the same poll.
    assert ctx.persisted()[0] == ElectionState(5, -1, None)
    assert isinstance(ctx.node.state, ProspectiveState) and ctx.node.epoch == 5


# --- Follower -------------------------------------------------------------------------------
def test_follower_grants_pre_votes_only_until_it_has_fetched() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    ctx.request(2, vote_request(2, 2, pre_vote=True))
    assert granted(ctx)
    ctx.respond(3, fetch_response(3, 2, hw=0))
    assert isinstance(ctx.node.state, FollowerState) and ctx.node.state.has_fetched
    ctx.request(2, vote_request(2, 2, pre_vote=True))
    assert not granted(ctx)
    ctx.request(2, vote_request(3, 2))  # a real vote of a new epoch is another matter
    assert granted(ctx) and ctx.node.epoch == 3


def test_follower_of_a_higher_epoch_via_begin_quorum_epoch_and_fencing() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    ctx.request(2, begin_epoch(2, 4))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and (st.epoch, st.leader_id) == (4, 2)
    assert ctx.persisted() == [ElectionState(4, 2, None)]
    ctx.request(3, begin_epoch(3, 3))
    resp = ctx.response().message
    assert resp.topics[0].partitions[0].error_code == Errors.FENCED_LEADER_EPOCH


def test_end_quorum_epoch_backoff_by_preferred_position() -> None:
    assert strict_exponential_election_backoff_ms(0, 3, 1000) == 0
    assert strict_exponential_election_backoff_ms(1, 3, 1000) == 250
    assert strict_exponential_election_backoff_ms(2, 3, 1000) == 500
    assert strict_exponential_election_backoff_ms(5, 3, 1000) == 1000
    first = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    first.request(3, end_epoch(3, 2, [1, 2]))
    assert isinstance(first.node.state, ProspectiveState)  # the first successor runs at once
    second = RaftTestContext(2, [1, 2, 3], election=ElectionState(2, 3, None))
    second.request(3, end_epoch(3, 2, [1, 2]))
    st = second.node.state
    assert isinstance(st, FollowerState) and st.fetch_deadline_ms == second.now + 1000 >> 1


def test_durable_transitions_persist_before_any_other_effect() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, True))
    assert isinstance(ctx.effects[0], PersistElectionState)
    assert not any(isinstance(e, SendResponse) for e in ctx.effects[:1])


def test_config_drives_the_timers() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], config=QuorumConfig(election_timeout_ms=200))
    assert 200 <= ctx.deadline < 400


def test_graceful_resign_and_end_quorum_epoch_acknowledgements() -> None:
    from metaquorum.protocol.messages import EndQuorumEpochResponseData

    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.become_leader()
    ctx.handle(Resign())
    st = ctx.node.state
    assert isinstance(st, ResignedState) and st.unacked_voters == frozenset({2, 3})
    assert sorted(s.destination for s in ctx.sent(EndQuorumEpochRequestData)) == [2, 3]
    ack = EndQuorumEpochResponseData(
        topics=[
            EndQuorumEpochResponseData.TopicData(
                topic_name="__cluster_metadata",
                partitions=[
                    EndQuorumEpochResponseData.PartitionData(
                        partition_index=0, error_code=0, leader_id=1, leader_epoch=1
                    )
                ],
            )
        ]
    )
    ctx.respond(2, ack)
    st = ctx.node.state
    assert isinstance(st, ResignedState) and st.unacked_voters == frozenset({3})
    ctx.request(2, vote_request(1, 2, pre_vote=True))
    assert not granted(ctx)  # a resigned leader grants nothing in its epoch


# --- graceful shutdown (Kafka's KafkaRaftClient.shutdown) ------------------------------------
def test_resigned_leader_grants_pre_votes_for_an_up_to_date_log_only() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.become_leader()
    ctx.handle(Resign())
    assert isinstance(ctx.node.state, ResignedState)
    ctx.request(2, vote_request(1, 2, pre_vote=True, last_epoch=1, last_offset=1))
    assert granted(ctx)
    ctx.request(2, vote_request(1, 2, pre_vote=True, last_epoch=0, last_offset=0))
    assert not granted(ctx)  # behind the resigned leader's LeaderChange record
    ctx.request(2, vote_request(1, 2))
    assert not granted(ctx)  # a standard vote of the same epoch, never


def test_shutdown_of_a_leader_hands_its_log_over_then_stays_resigned() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.become_leader()  # the LeaderChange record at offset 0
    ctx.append(7, b"x")  # idle log: appended at once, offset 1
    assert ctx.node.log.end_offset == 2
    ctx.handle(Shutdown())
    assert isinstance(ctx.node.state, LeaderState)  # no successor holds the whole log yet
    ctx.append(8, b"late")
    assert AppendFailed(8, "NOT_LEADER_OR_FOLLOWER") in ctx.effects
    ctx.request(3, fetch_request(3, 1, 1, 1))
    assert isinstance(ctx.node.state, LeaderState)
    ctx.request(2, fetch_request(2, 1, 2, 1))  # voter 2 holds [0, 2): it takes over
    st = ctx.node.state
    assert isinstance(st, ResignedState) and st.preferred_successors == (2, 3)
    assert not ctx.node.shutdown_complete
    assert sorted(s.destination for s in ctx.sent(EndQuorumEpochRequestData)) == [2, 3]
    ctx.advance(10_000)  # no election timeout takes it out of Resigned while shutting down
    assert isinstance(ctx.node.state, ResignedState) and ctx.node.epoch == 1
    ctx.request(2, vote_request(2, 2, last_epoch=1, last_offset=2))
    assert granted(ctx) and ctx.node.epoch == 2 and not ctx.node.shutdown_complete
    ctx.advance(10_000)  # Unattached and shutting down: it never campaigns
    assert isinstance(ctx.node.state, UnattachedState)
    assert not ctx.sent(VoteRequestData)
    ctx.request(2, begin_epoch(2, 2))
    assert isinstance(ctx.node.state, FollowerState) and ctx.node.shutdown_complete


def test_shutdown_of_a_leader_resigns_after_the_election_timeout_without_a_successor() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.become_leader()
    ctx.handle(Shutdown())
    assert isinstance(ctx.node.state, LeaderState) and ctx.deadline <= ctx.now + 1000
    ctx.advance(999)
    assert isinstance(ctx.node.state, LeaderState)
    ctx.advance(1)
    assert isinstance(ctx.node.state, ResignedState)


def test_a_second_shutdown_keeps_the_first_ones_hand_over_bound() -> None:
    """A second Shutdown (a second SIGTERM) changes nothing: the hand-over stays bounded by the
    first one's time. Before the event table (issue 34) it raised `TypeError: unknown event`."""
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.become_leader()
    ctx.handle(Shutdown())
    ctx.advance(600)
    ctx.handle(Shutdown())
    assert ctx.node.shutdown_started_ms == ctx.now - 600
    ctx.advance(400)  # the election timeout since the *first* Shutdown
    assert isinstance(ctx.node.state, ResignedState)


def test_shutdown_of_a_follower_completes_at_once_and_never_campaigns() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    assert not ctx.node.shutdown_complete
    ctx.handle(Shutdown())
    assert ctx.node.shutdown_complete
    ctx.advance(10_000)  # past the fetch timeout
    assert isinstance(ctx.node.state, FollowerState) and not ctx.sent(VoteRequestData)


def test_shutdown_of_a_candidate_goes_on_with_its_election_only() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(0, True))
    assert isinstance(ctx.node.state, CandidateState)
    ctx.handle(Shutdown())
    ctx.advance(10_000)  # past its election timeout: still the same election
    assert isinstance(ctx.node.state, CandidateState) and ctx.node.epoch == 1
    ctx.advance_to_deadline()  # the timed-out Vote to 3 is sent again after its backoff
    assert sorted(s.destination for s in ctx.sent(VoteRequestData)) == [2, 3]
    ctx.respond(3, vote_response(1, True))
    assert isinstance(ctx.node.state, ResignedState)  # elected, then resigns at once


def test_shutting_down_first_successor_keeps_a_future_deadline() -> None:
    # EndQuorumEpoch makes the first successor's fetch timer expire at once; shutting down it
    # must not campaign, and must not report a deadline that is already due (a busy loop).
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(2, 3, None))
    ctx.handle(Shutdown())
    ctx.request(3, end_epoch(3, 2, [1, 2]))
    assert isinstance(ctx.node.state, FollowerState) and ctx.deadline > ctx.now
    ctx.advance(5000)
    assert isinstance(ctx.node.state, FollowerState) and ctx.deadline > ctx.now
    assert not ctx.sent(VoteRequestData)


def test_begin_and_end_quorum_epoch_for_another_partition_are_invalid() -> None:
    """Kafka's `RaftUtil.hasValidTopicPartition` checks the partition index of every quorum
    RPC; Begin/EndQuorumEpoch for `__cluster_metadata`-1 change nothing (issue 13)."""
    from dataclasses import replace

    ctx = RaftTestContext(1, [1, 2, 3])
    for request in (begin_epoch(2, 5), end_epoch(2, 5, [1])):
        topic = request.topics[0]
        other = replace(topic, partitions=[replace(topic.partitions[0], partition_index=1)])
        ctx.request(2, replace(request, topics=[other]))
        assert ctx.response().message.error_code == Errors.INVALID_REQUEST
        assert ctx.node.epoch == 0 and ctx.node.leader_id == -1

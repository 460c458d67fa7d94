"""Kafka 4.3 retry and election timing (issue 12), each against `QuorumState` /
`KafkaRaftClient` of the 4.3 branch; every test here fails on the code before the fix.
"""

from __future__ import annotations

from dataclasses import replace

from metaquorum.core.config import QuorumConfig
from metaquorum.core.effects import SendRequest
from metaquorum.core.ids import OffsetAndEpoch, ReplicaKey
from metaquorum.core.log import LogEntry, RaftLog, ValidationKind
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
    DescribeQuorumRequestData,
    FetchRequestData,
    FetchResponseData,
    VoteRequestData,
    VoteResponseData,
)
from metaquorum.protocol.types import Uuid

from tests.unit.core.context import (
    RaftTestContext,
    end_epoch,
    entries,
    fetch_request,
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


# --- Fetch, check-quorum, observers (LeaderState / RaftLog of 4.3) ---------------------------
def test_fetcher_older_than_the_snapshot_epoch_gets_the_snapshot_id() -> None:
    log = RaftLog([LogEntry(i, e) for i, e in enumerate([1, 1, 2, 3, 3, 3])])
    log.create_snapshot(4, b"state")  # snapshot (epoch 3, end 4); log 4..5 at epoch 3
    # offset inside the log but the fetcher's last epoch (2) predates the snapshot's epoch
    got = log.validate_offset_and_epoch(5, 2)
    assert got.kind is ValidationKind.SNAPSHOT and got.offset_and_epoch == OffsetAndEpoch(3, 4)
    assert log.validate_offset_and_epoch(5, 3).kind is ValidationKind.VALID


def test_check_quorum_counts_only_validated_fetches() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()
    e = ctx.node.epoch
    st = ctx.node.state
    assert isinstance(st, LeaderState)
    deadline = st.check_quorum_deadline_ms
    ctx.advance(1000)
    ctx.request(2, fetch_request(2, e, 7, e - 1))  # diverging: not a following voter yet
    assert ctx.node.state.check_quorum_deadline_ms == deadline  # type: ignore[union-attr]
    ctx.request(2, fetch_request(2, e, 2, 1))  # validated
    assert ctx.node.state.check_quorum_deadline_ms == ctx.now + 3000  # type: ignore[union-attr]


def test_caught_up_time_is_measured_against_the_flushed_end_offset() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()  # log 0..2, flushed 3
    e = ctx.node.epoch
    ctx.append(1, b"a")
    ctx.advance(30)  # drained, appended: LEO 4, not flushed
    assert ctx.node.log.end_offset == 4 and ctx.node.log.flushed_offset == 3
    ctx.advance(10)
    ctx.request(2, fetch_request(2, e, 3, e))  # has everything the leader has made durable
    ctx.request(99, DescribeQuorumRequestData(topics=[_dq_topic()]))
    voters = ctx.response().message.topics[0].partitions[0].current_voters
    by_id = {v.replica_id: v for v in voters}
    assert by_id[2].last_caught_up_timestamp == ctx.now
    assert by_id[1].log_end_offset == 3  # the leader reports its flushed end offset


def test_observers_expire_after_the_observer_session_timeout() -> None:
    ctx = RaftTestContext(1, [1])  # the only voter: leads at once, never resigns
    ctx.flush()
    ctx.request(4, fetch_request(4, 1, 0, 0, max_wait=0))
    ctx.advance(299_999)
    ctx.request(99, DescribeQuorumRequestData(topics=[_dq_topic()]))
    observers = ctx.response().message.topics[0].partitions[0].observers
    assert [o.replica_id for o in observers] == [4]
    ctx.advance(1)
    ctx.request(99, DescribeQuorumRequestData(topics=[_dq_topic()]))
    assert ctx.response().message.topics[0].partitions[0].observers == []


def test_end_quorum_epoch_keeps_a_snapshot_download_going() -> None:
    ctx = RaftTestContext(2, [1, 2, 3], election=ElectionState(3, 1, None))
    resp = fetch_response(1, 3, hw=5)
    part = replace(
        resp.responses[0].partitions[0],
        snapshot_id=FetchResponseData.SnapshotId(end_offset=5, epoch=2),
    )
    ctx.respond(1, replace(resp, responses=[replace(resp.responses[0], partitions=[part])]))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.fetching_snapshot is not None
    ctx.request(1, end_epoch(1, 3, [3, 2]))  # second in line: a backoff, still Follower
    st = ctx.node.state
    assert isinstance(st, FollowerState)
    assert st.fetching_snapshot == (OffsetAndEpoch(2, 5), b"")  # not dropped


# --- vote matching with directory ids (QuorumState.unattachedOrProspectiveCanGrantVote) -----
def test_vote_without_directory_id_does_not_match_a_vote_stored_with_one() -> None:
    directory = Uuid.random()
    stored = ReplicaKey(2, str(directory))
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(5, -1, stored))
    without = vote_request(5, 2, 0, 0)
    ctx.request(2, without)
    assert ctx.response().message.topics[0].partitions[0].vote_granted is False
    p = without.topics[0].partitions[0]
    same = replace(without, topics=[replace(without.topics[0], partitions=[
        replace(p, replica_directory_id=directory)
    ])])  # fmt: skip
    ctx.request(2, same)
    assert ctx.response().message.topics[0].partitions[0].vote_granted is True
    # A vote stored without a directory id (kraft.version 0) matches the id alone.
    old = RaftTestContext(1, [1, 2, 3], election=ElectionState(5, -1, ReplicaKey(2)))
    old.request(2, same)
    assert old.response().message.topics[0].partitions[0].vote_granted is True


def _dq_topic() -> DescribeQuorumRequestData.TopicData:
    return DescribeQuorumRequestData.TopicData(
        topic_name="__cluster_metadata",
        partitions=[DescribeQuorumRequestData.PartitionData(partition_index=0)],
    )

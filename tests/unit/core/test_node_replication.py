"""Single-node tests of replication: Fetch on both sides, the high watermark, appends."""

from __future__ import annotations

from metaquorum.core.config import QuorumConfig
from metaquorum.core.effects import AppendCommitted, AppendFailed, SendResponse, TruncateLog
from metaquorum.core.errors import TruncationBelowHighWatermark
from metaquorum.core.events import Flushed
from metaquorum.core.states import ElectionState, FollowerState
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    DescribeQuorumRequestData,
    DescribeQuorumResponseData,
    FetchRequestData,
    FetchResponseData,
)
from metaquorum.protocol.types import Uuid

from tests.unit.core.context import (
    RaftTestContext,
    entries,
    fetch_request,
    fetch_response,
    vote_response,
)


def leader(voters: list[int] | None = None, epochs: list[int] | None = None) -> RaftTestContext:
    ctx = RaftTestContext(1, voters or [1, 2, 3], epochs=epochs or [])
    ctx.become_leader()
    return ctx


def partition(ctx: RaftTestContext) -> FetchResponseData.PartitionData:
    msg = ctx.response().message
    assert isinstance(msg, FetchResponseData)
    return msg.responses[0].partitions[0]


# --- leader side ----------------------------------------------------------------------------
def test_leader_validates_fetch_requests() -> None:
    ctx = leader()
    e = ctx.node.epoch
    ctx.request(2, fetch_request(2, e, 0, 0, cluster_id="other"))
    assert ctx.response().message.error_code == Errors.INCONSISTENT_CLUSTER_ID
    ctx.request(2, fetch_request(2, e, 0, 0, topic_id=Uuid.ZERO))
    assert ctx.response().message.error_code == Errors.INVALID_REQUEST
    for bad in (
        fetch_request(2, e, -1, 0),
        fetch_request(2, e, 0, e + 1),
        fetch_request(2, e, 0, 0, max_wait=-1),
    ):
        ctx.request(2, bad)
        assert partition(ctx).error_code == Errors.INVALID_REQUEST
    ctx.request(2, fetch_request(2, e - 1, 0, 0))
    assert partition(ctx).error_code == Errors.FENCED_LEADER_EPOCH
    ctx.request(2, fetch_request(2, e + 1, 0, 0))
    assert partition(ctx).error_code == Errors.UNKNOWN_LEADER_EPOCH
    assert partition(ctx).current_leader.leader_id == 1


def test_non_leader_answers_not_leader_with_its_leader() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], election=ElectionState(3, 2, None))
    ctx.request(4, fetch_request(4, 3, 0, 0))
    p = partition(ctx)
    assert p.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (2, 3)


def test_leader_returns_records_then_diverging_epoch() -> None:
    ctx = leader(epochs=[1, 1, 2])
    e = ctx.node.epoch  # 3; log: [1, 1, 2, LeaderChange@3]
    ctx.request(2, fetch_request(2, e, 0, 0))
    resp = ctx.response()
    assert [x.offset for x in resp.entries] == [0, 1, 2, 3]
    # A follower with (offset 3, epoch 1) diverged: epoch 1 ends at offset 2 here.
    ctx.request(2, fetch_request(2, e, 3, 1))
    p = partition(ctx)
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (1, 2)
    assert ctx.response().entries == ()


def test_high_watermark_needs_a_flushed_majority_and_the_epoch_record() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.advance_to_deadline()
    ctx.respond(2, vote_response(ctx.node.epoch, True))  # pre-vote
    ctx.respond(2, vote_response(ctx.node.epoch, True))  # vote
    e = ctx.node.epoch
    assert ctx.node.state.role.value == "Leader" and e == 2
    # The follower already has the old entries, but the leader's own record (offset 2) is not
    # flushed anywhere: no HW yet, even though offsets 0-1 are on a majority.
    ctx.request(2, fetch_request(2, e, 2, 1))
    assert ctx.node.high_watermark is None
    ctx.request(2, fetch_request(2, e, 3, e))  # follower flushed offset 2
    assert ctx.node.high_watermark is None  # the leader itself has not flushed it
    ctx.flush()
    assert ctx.node.high_watermark == 3 and ctx.hw_reports() == [3]


def test_parked_fetch_completes_on_new_data_and_on_hw_movement() -> None:
    ctx = leader()
    e = ctx.node.epoch
    ctx.request(2, fetch_request(2, e, 1, e, hw=-1), cid=7)
    # HW became 1 only now (this fetch acknowledged offset 1): the follower's HW (-1) is stale.
    assert ctx.response().correlation_id == 7 and partition(ctx).high_watermark == 1
    ctx.request(2, fetch_request(2, e, 1, e, hw=1), cid=8)
    assert not [x for x in ctx.effects if isinstance(x, SendResponse)]  # parked
    ctx.append(1, b"a")  # the log is idle (all flushed): adaptive linger drains at once
    resp = [x for x in ctx.effects if isinstance(x, SendResponse)]
    assert [r.correlation_id for r in resp] == [8] and [x.value for x in resp[0].entries] == [b"a"]


def test_parked_fetch_expires_after_max_wait() -> None:
    ctx = leader()
    e = ctx.node.epoch
    ctx.request(2, fetch_request(2, e, 1, e, hw=-1))
    ctx.request(2, fetch_request(2, e, 1, e, hw=1, max_wait=500), cid=9)
    ctx.advance(499)
    assert not [x for x in ctx.effects if isinstance(x, SendResponse)]
    ctx.advance(1)
    assert [x.correlation_id for x in ctx.effects if isinstance(x, SendResponse)] == [9]


def test_append_commits_after_majority_and_fails_when_not_leader() -> None:
    ctx = leader()
    e = ctx.node.epoch
    ctx.append(5, b"a", b"b")  # the log is idle: drained at once (adaptive linger)
    assert [x.offset for x in ctx.appended()] == [1, 2] and ctx.flush_requested()
    ctx.flush()
    ctx.request(2, fetch_request(2, e, 3, e))
    assert [x for x in ctx.effects if isinstance(x, AppendCommitted)] == [AppendCommitted(5, 2)]
    follower = RaftTestContext(2, [1, 2, 3])
    follower.append(6, b"x")
    assert follower.effects == [AppendFailed(6, "NOT_LEADER_OR_FOLLOWER")]


def flushed_leader(config: QuorumConfig | None = None) -> RaftTestContext:
    ctx = RaftTestContext(1, [1, 2, 3], config=config or QuorumConfig())
    ctx.become_leader()
    ctx.flush()  # the LeaderChange record is durable: the log is idle
    return ctx


def test_adaptive_linger_drains_at_once_when_the_log_is_idle() -> None:
    ctx = flushed_leader()
    ctx.append(5, b"a")
    assert [x.offset for x in ctx.appended()] == [1] and ctx.flush_requested()


def test_adaptive_linger_batches_while_a_flush_is_running() -> None:
    ctx = flushed_leader()
    ctx.append(5, b"a")  # drained at once, its fsync now runs
    ctx.append(6, b"b")
    ctx.append(7, b"c")
    assert ctx.appended() == []  # waits for the running flush, not for the linger
    ctx.now += 3
    ctx.handle(Flushed(2))
    assert [(x.offset, x.value) for x in ctx.appended()] == [(2, b"b"), (3, b"c")]
    assert ctx.flush_requested()


def test_adaptive_linger_keeps_linger_ms_as_the_upper_bound() -> None:
    ctx = flushed_leader()
    ctx.append(5, b"a")
    ctx.append(6, b"b")  # the flush of offset 1 never completes
    ctx.advance(24)
    assert ctx.appended() == []
    assert ctx.deadline == ctx.now + 1
    ctx.advance(1)
    assert [x.value for x in ctx.appended()] == [b"b"]


def test_plain_linger_when_adaptive_is_off() -> None:
    ctx = flushed_leader(QuorumConfig(append_linger_adaptive=0))
    ctx.append(5, b"a")
    assert ctx.appended() == []
    ctx.advance(25)
    assert [x.value for x in ctx.appended()] == [b"a"]


def test_losing_leadership_fails_pending_appends() -> None:
    ctx = leader()
    ctx.append(5, b"a")
    ctx.advance(3000)  # check-quorum expires: resign
    assert AppendFailed(5, "NOT_LEADER_OR_FOLLOWER") in ctx.effects


def test_describe_quorum_on_leader_and_elsewhere() -> None:
    ctx = leader()
    e = ctx.node.epoch
    ctx.request(2, fetch_request(2, e, 1, e))
    req = DescribeQuorumRequestData(
        topics=[
            DescribeQuorumRequestData.TopicData(
                topic_name="__cluster_metadata",
                partitions=[DescribeQuorumRequestData.PartitionData(partition_index=0)],
            )
        ]
    )
    ctx.request(9, req)
    msg = ctx.response().message
    assert isinstance(msg, DescribeQuorumResponseData)
    p = msg.topics[0].partitions[0]
    assert (p.leader_id, p.leader_epoch, p.high_watermark) == (1, e, 1)
    voters = {v.replica_id: v for v in p.current_voters}
    assert voters[1].last_fetch_timestamp == ctx.now and voters[2].log_end_offset == 1
    assert voters[3].log_end_offset == -1 and voters[3].last_fetch_timestamp == -1
    other = RaftTestContext(2, [1, 2, 3])
    other.request(9, req)
    p2 = other.response().message.topics[0].partitions[0]
    assert p2.error_code == Errors.NOT_LEADER_OR_FOLLOWER


# --- follower side --------------------------------------------------------------------------
def follower(epochs: list[int] | None = None, epoch: int = 3) -> RaftTestContext:
    return RaftTestContext(
        1, [1, 2, 3], election=ElectionState(epoch, 2, None), epochs=epochs or []
    )


def sent_fetch(ctx: RaftTestContext) -> FetchRequestData.FetchPartition:
    fetches = ctx.sent(FetchRequestData)
    assert len(fetches) == 1, ctx.effects
    return fetches[0].message.topics[0].partitions[0]


def test_follower_fetch_request_shape() -> None:
    ctx = follower(epochs=[1, 2])
    p = sent_fetch(ctx)
    assert (p.fetch_offset, p.last_fetched_epoch, p.current_leader_epoch, p.high_watermark) == (
        2,
        2,
        3,
        -1,
    )
    msg = ctx.sent(FetchRequestData)[0].message
    assert msg.topics[0].topic_id == Uuid.METADATA_TOPIC_ID and msg.replica_state.replica_id == 1
    assert msg.max_wait_ms == 500


def test_follower_appends_flushes_and_only_then_fetches_again() -> None:
    ctx = follower()
    ctx.respond(2, fetch_response(2, 3, hw=2), entries(0, [3, 3]))
    assert [x.offset for x in ctx.appended()] == [0, 1] and ctx.flush_requested()
    assert not ctx.sent(FetchRequestData)  # the barrier: nothing acknowledged before fsync
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.high_watermark == 2
    ctx.flush()
    assert sent_fetch(ctx).fetch_offset == 2


def test_follower_hw_is_capped_by_its_log_end() -> None:
    ctx = follower()
    ctx.respond(2, fetch_response(2, 3, hw=10), entries(0, [3]))
    assert ctx.node.high_watermark == 1


def test_follower_truncates_on_diverging_epoch() -> None:
    ctx = follower(epochs=[1, 1, 2, 2])
    ctx.respond(2, fetch_response(2, 3, diverging=(1, 2)))
    assert TruncateLog(2) in ctx.effects and ctx.node.log.end_offset == 2
    assert sent_fetch(ctx).fetch_offset == 2 and sent_fetch(ctx).last_fetched_epoch == 1


def test_follower_refuses_to_truncate_below_its_hw() -> None:
    ctx = follower(epochs=[1, 1, 2, 2])
    ctx.respond(2, fetch_response(2, 3, hw=4))
    try:
        ctx.respond(2, fetch_response(2, 3, diverging=(1, 2)))
    except TruncationBelowHighWatermark:
        return
    raise AssertionError("truncation below the high watermark was accepted")


def test_fetch_response_of_a_newer_leader_moves_the_follower() -> None:
    ctx = follower()
    ctx.respond(2, fetch_response(3, 5, error=Errors.FENCED_LEADER_EPOCH))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and (st.epoch, st.leader_id) == (5, 3)


def test_stale_or_duplicated_fetch_responses_are_ignored() -> None:
    ctx = follower()
    cid = ctx.sent(FetchRequestData)[0].correlation_id
    from metaquorum.core.events import ResponseReceived

    ctx.handle(ResponseReceived(2, cid + 100, fetch_response(2, 3, hw=1), entries(0, [3])))
    assert ctx.appended() == []
    ctx.handle(ResponseReceived(2, cid, fetch_response(2, 3, hw=1), entries(0, [3])))
    ctx.handle(ResponseReceived(2, cid, fetch_response(2, 3, hw=1), entries(0, [3])))
    assert ctx.appended() == [] and ctx.node.log.end_offset == 1  # the duplicate did nothing


def test_observer_fetches_from_voters_and_follows_the_leader() -> None:
    ctx = RaftTestContext(4, [1, 2, 3])
    fetches = ctx.sent(FetchRequestData)
    assert len(fetches) == 1 and fetches[0].destination in (1, 2, 3)
    ctx.respond(fetches[0].destination, fetch_response(2, 3, error=Errors.FENCED_LEADER_EPOCH))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.leader_id == 2

"""DescribeQuorum RPC (KIP-595 §DescribeQuorum, KIP-836 timestamps, v2 per KIP-853).

Role: the leader reports its epoch, HW and, per voter and observer, the log end offset and
the last fetch / last caught-up timestamps (the leader reports itself at `now`, with its
flushed end offset); observers silent for Kafka's observer session timeout (5 min) are dropped;
v2's node list is every voter's listeners, from the voter set the core holds.
Invariants: only the leader answers with data; any other replica answers top-level NONE with
a partition-level NOT_LEADER_OR_FOLLOWER (Kafka's `singletonErrorResponse`); a request for any
other partition gets UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.effects import SendResponse
from metaquorum.core.events import RequestReceived
from metaquorum.core.high_watermark import ReplicaProgress
from metaquorum.core.rpc_common import PARTITION, directory_uuid, quorum_partition
from metaquorum.core.states import LeaderState
from metaquorum.core.value import replace
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import DescribeQuorumRequestData, DescribeQuorumResponseData
from metaquorum.protocol.types import Uuid

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def _error_response(
    ctx: RaftContext, error: Errors, message: str | None
) -> DescribeQuorumResponseData:
    partition = DescribeQuorumResponseData.PartitionData(
        partition_index=PARTITION, error_code=int(error), error_message=message
    )
    return DescribeQuorumResponseData(
        error_code=0,
        topics=[
            DescribeQuorumResponseData.TopicData(
                topic_name=ctx.local.topic.name, partitions=[partition]
            )
        ],
    )


def _replica_state(
    ctx: RaftContext, r: ReplicaProgress, voter: bool = False
) -> DescribeQuorumResponseData.ReplicaState:
    state = _replica_state_of(ctx, r)
    directory = ctx.voters.key_of(r.replica_id).directory_id if voter else r.directory_id
    return replace(state, replica_directory_id=directory_uuid(directory))


def _replica_state_of(
    ctx: RaftContext, r: ReplicaProgress
) -> DescribeQuorumResponseData.ReplicaState:
    if r.replica_id == ctx.local.id:
        # Kafka reports the leader's own end offset as recorded on flush (its durable LEO).
        return DescribeQuorumResponseData.ReplicaState(
            replica_id=r.replica_id,
            log_end_offset=-1 if r.end_offset is None else r.end_offset,
            last_fetch_timestamp=ctx.now_ms,
            last_caught_up_timestamp=ctx.now_ms,
        )
    return DescribeQuorumResponseData.ReplicaState(
        replica_id=r.replica_id,
        log_end_offset=-1 if r.end_offset is None else r.end_offset,
        last_fetch_timestamp=r.last_fetch_ms,
        last_caught_up_timestamp=r.last_caught_up_ms,
    )


def _nodes(ctx: RaftContext) -> list[DescribeQuorumResponseData.Node]:
    """v2 (KIP-853): every voter's listeners, from the voter set (Kafka's RaftUtil)."""
    return [
        DescribeQuorumResponseData.Node(
            node_id=v.key.id,
            listeners=[
                DescribeQuorumResponseData.Listener(name=e.name, host=e.host, port=e.port)
                for e in v.endpoints
            ],
        )
        for v in ctx.voters.nodes
    ]


def build_describe_quorum_response(ctx: RaftContext) -> DescribeQuorumResponseData:
    st = ctx.state
    assert isinstance(st, LeaderState)
    progress = st.data.progress
    hw = ctx.high_watermark
    partition = DescribeQuorumResponseData.PartitionData(
        partition_index=PARTITION,
        error_code=0,
        leader_id=ctx.local.id,
        leader_epoch=ctx.state.epoch,
        high_watermark=-1 if hw is None else hw,
        current_voters=[
            _replica_state(ctx, progress.voters[v], voter=True) for v in sorted(progress.voters)
        ],
        observers=[
            _replica_state(ctx, r)
            for r in sorted(
                progress.active_observers(ctx.now_ms).values(),
                key=lambda r: (r.replica_id, r.directory_id or ""),
            )
        ],
    )
    return DescribeQuorumResponseData(
        error_code=0,
        topics=[
            DescribeQuorumResponseData.TopicData(
                topic_name=ctx.local.topic.name, partitions=[partition]
            )
        ],
        nodes=_nodes(ctx),
    )


def handle_describe_quorum_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, DescribeQuorumRequestData)
    if quorum_partition(request.topics, ctx.local.topic.name) is None:
        response = _error_response(ctx, Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
    elif not isinstance(ctx.state, LeaderState):
        response = _error_response(ctx, Errors.NOT_LEADER_OR_FOLLOWER, "not the leader")
    else:
        response = build_describe_quorum_response(ctx)
    ctx.emit(SendResponse(event.source, event.correlation_id, response))


def for_version(response: DescribeQuorumResponseData, version: int) -> DescribeQuorumResponseData:
    """The response as Kafka's `RaftUtil.singletonDescribeQuorumResponse` builds it for
    `version`: below v2 (KIP-853) there is no node list and no replica directory id."""
    if version >= 2:
        return response

    def strip(
        states: list[DescribeQuorumResponseData.ReplicaState],
    ) -> list[DescribeQuorumResponseData.ReplicaState]:
        return [replace(s, replica_directory_id=Uuid.ZERO) for s in states]

    topics = [
        replace(
            t,
            partitions=[
                replace(p, current_voters=strip(p.current_voters), observers=strip(p.observers))
                for p in t.partitions
            ],
        )
        for t in response.topics
    ]
    return replace(response, topics=topics, nodes=[])

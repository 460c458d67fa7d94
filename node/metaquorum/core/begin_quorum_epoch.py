"""BeginQuorumEpoch RPC (KIP-595 §BeginQuorumEpoch; v1 per KIP-853).

Role: a new leader tells the voters about its epoch; the leader re-sends it to every voter that
has not fetched within `fetch.timeout.ms / 2` (Kafka's `beginQuorumEpochTimeoutMs`).
Invariants: a BeginQuorumEpoch of an older epoch is fenced (FENCED_LEADER_EPOCH) and never
changes state; one of the current or a newer epoch makes the receiver follow that leader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import discovery
from metaquorum.core.effects import SendResponse
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.core.rpc_common import (
    PARTITION,
    directory_uuid,
    is_valid_voter_key,
    maybe_handle_common_response,
    quorum_partition,
    request_prelude,
    response_failed,
    to_error,
    validate_voter_only_request,
)
from metaquorum.core.states import LeaderState
from metaquorum.core.value import replace
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import BeginQuorumEpochRequestData, BeginQuorumEpochResponseData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def build_begin_quorum_epoch_request(
    ctx: RaftContext, destination: int
) -> BeginQuorumEpochRequestData:
    partition = BeginQuorumEpochRequestData.PartitionData(
        partition_index=PARTITION,
        leader_id=ctx.local.id,
        leader_epoch=ctx.state.epoch,
        voter_directory_id=directory_uuid(ctx.voters.key_of(destination).directory_id),
    )
    return BeginQuorumEpochRequestData(
        cluster_id=ctx.local.cluster_id,
        voter_id=destination,
        leader_endpoints=[
            BeginQuorumEpochRequestData.LeaderEndpoint(name=e.name, host=e.host, port=e.port)
            for e in ctx.local.endpoints
        ],
        topics=[
            BeginQuorumEpochRequestData.TopicData(
                topic_name=ctx.local.topic.name, partitions=[partition]
            )
        ],
    )


def build_begin_quorum_epoch_response(
    ctx: RaftContext, error: Errors
) -> BeginQuorumEpochResponseData:
    partition = BeginQuorumEpochResponseData.PartitionData(
        partition_index=PARTITION,
        error_code=int(error),
        leader_id=ctx.leader_id,
        leader_epoch=ctx.state.epoch,
    )
    return BeginQuorumEpochResponseData(
        error_code=0,
        topics=[
            BeginQuorumEpochResponseData.TopicData(
                topic_name=ctx.local.topic.name, partitions=[partition]
            )
        ],
    )


def handle_begin_quorum_epoch_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, BeginQuorumEpochRequestData)

    def respond(message: BeginQuorumEpochResponseData) -> None:
        ctx.emit(SendResponse(event.source, event.correlation_id, message))

    p = request_prelude(
        ctx,
        request.cluster_id,
        quorum_partition(request.topics, ctx.local.topic.name),
        lambda error: respond(BeginQuorumEpochResponseData(error_code=int(error))),
    )
    if p is None:
        return
    error = validate_voter_only_request(ctx, p.leader_id, p.leader_epoch)
    if error != Errors.NONE:
        respond(build_begin_quorum_epoch_response(ctx, error))
        return
    # Kafka: the leader's endpoints from the request, else from the voter set (a voter whose
    # set lacks the new leader would otherwise follow a leader it cannot reach).
    endpoint = discovery.request_leader_endpoint(ctx, request.leader_endpoints)
    ctx.maybe_transition(p.leader_id, p.leader_epoch, endpoint)
    if not is_valid_voter_key(ctx, request.voter_id, p.voter_directory_id):
        respond(build_begin_quorum_epoch_response(ctx, Errors.INVALID_VOTER_KEY))
        return
    respond(build_begin_quorum_epoch_response(ctx, Errors.NONE))


def handle_begin_quorum_epoch_response(ctx: RaftContext, event: ResponseReceived) -> None:
    response = event.message
    assert isinstance(response, BeginQuorumEpochResponseData)
    if response.error_code != 0 or len(response.topics) != 1:
        response_failed(ctx, event.source)
        return
    for p in response.topics[0].partitions[:1]:
        error = to_error(p.error_code)
        handled = maybe_handle_common_response(ctx, error, p.leader_id, p.leader_epoch)
        if not handled and error != Errors.NONE:
            response_failed(ctx, event.source)


def poll_leader(ctx: RaftContext) -> int:
    """Send BeginQuorumEpoch to voters that have not fetched recently; the next deadline."""
    st = ctx.state
    assert isinstance(st, LeaderState)
    now = ctx.now_ms
    timeout = ctx.config.begin_quorum_epoch_timeout_ms
    if now < st.begin_quorum_epoch_deadline_ms:
        return st.begin_quorum_epoch_deadline_ms
    for voter in ctx.voters.sorted_ids():
        if voter == ctx.local.id:
            continue
        replica = st.data.progress.voters.get(voter)
        recently = (
            replica is not None
            and replica.last_fetch_ms >= 0
            and now - replica.last_fetch_ms < timeout
        )
        if not recently and ctx.requests.is_ready(voter, now):
            ctx.send(voter, build_begin_quorum_epoch_request(ctx, voter))
    deadline = now + timeout
    ctx.update_state(replace(st, begin_quorum_epoch_deadline_ms=deadline))
    return deadline

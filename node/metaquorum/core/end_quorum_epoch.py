"""EndQuorumEpoch RPC (KIP-595 §EndQuorumEpoch; v1 PreferredCandidates per KIP-853).

Role: a resigning leader tells the voters, listing its successors most caught up first; a
follower of that leader then shortens its fetch timeout by Kafka's strict exponential backoff
for its position (0 for the first, so the most up-to-date voter runs first).
Invariants: only the follower of the resigning leader in that epoch changes its timer; an
older epoch is fenced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import discovery
from metaquorum.core.effects import SendResponse
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.core.rpc_common import (
    PARTITION,
    directory_uuid,
    maybe_handle_common_response,
    quorum_partition,
    request_prelude,
    response_failed,
    to_error,
    validate_voter_only_request,
)
from metaquorum.core.states import FollowerState, ResignedState
from metaquorum.core.value import replace
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import EndQuorumEpochRequestData, EndQuorumEpochResponseData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def strict_exponential_election_backoff_ms(position: int, total: int, backoff_max_ms: int) -> int:
    """Kafka's `strictExponentialElectionBackoffMs`."""
    if position == 0:
        return 0
    if position < 0 or position >= total:
        return backoff_max_ms
    base = backoff_max_ms >> (total - 1)
    return min(backoff_max_ms, base << (position - 1))


def build_end_quorum_epoch_request(
    ctx: RaftContext, st: ResignedState
) -> EndQuorumEpochRequestData:
    partition = EndQuorumEpochRequestData.PartitionData(
        partition_index=PARTITION,
        leader_id=ctx.local.id,
        leader_epoch=st.epoch,
        preferred_successors=list(st.preferred_successors),
        preferred_candidates=[
            EndQuorumEpochRequestData.ReplicaInfo(
                candidate_id=c,
                candidate_directory_id=directory_uuid(ctx.voters.key_of(c).directory_id),
            )
            for c in st.preferred_successors
        ],
    )
    return EndQuorumEpochRequestData(
        cluster_id=ctx.local.cluster_id,
        topics=[
            EndQuorumEpochRequestData.TopicData(
                topic_name=ctx.local.topic.name, partitions=[partition]
            )
        ],
        leader_endpoints=[  # Kafka: localListeners.toEndQuorumEpochRequest() (v1)
            EndQuorumEpochRequestData.LeaderEndpoint(name=e.name, host=e.host, port=e.port)
            for e in ctx.local.endpoints
        ],
    )


def build_end_quorum_epoch_response(ctx: RaftContext, error: Errors) -> EndQuorumEpochResponseData:
    partition = EndQuorumEpochResponseData.PartitionData(
        partition_index=PARTITION,
        error_code=int(error),
        leader_id=ctx.leader_id,
        leader_epoch=ctx.state.epoch,
    )
    return EndQuorumEpochResponseData(
        error_code=0,
        topics=[
            EndQuorumEpochResponseData.TopicData(
                topic_name=ctx.local.topic.name, partitions=[partition]
            )
        ],
    )


def handle_end_quorum_epoch_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, EndQuorumEpochRequestData)

    def respond(message: EndQuorumEpochResponseData) -> None:
        ctx.emit(SendResponse(event.source, event.correlation_id, message))

    p = request_prelude(
        ctx,
        request.cluster_id,
        quorum_partition(request.topics, ctx.local.topic.name),
        lambda error: respond(EndQuorumEpochResponseData(error_code=int(error))),
    )
    if p is None:
        return
    error = validate_voter_only_request(ctx, p.leader_id, p.leader_epoch)
    if error != Errors.NONE:
        respond(build_end_quorum_epoch_response(ctx, error))
        return
    endpoint = discovery.request_leader_endpoint(ctx, request.leader_endpoints)
    ctx.maybe_transition(p.leader_id, p.leader_epoch, endpoint)
    st = ctx.state
    if isinstance(st, FollowerState) and st.leader_id == p.leader_id:
        candidates = [c.candidate_id for c in p.preferred_candidates] or list(
            p.preferred_successors
        )
        position = candidates.index(ctx.local.id) if ctx.local.id in candidates else len(candidates)
        backoff = strict_exponential_election_backoff_ms(
            position, len(candidates), ctx.config.election_backoff_max_ms
        )
        # Only the fetch timer changes (Kafka's `overrideFetchTimeout`); a snapshot download
        # in progress goes on.
        ctx.update_state(replace(st, fetch_deadline_ms=ctx.now_ms + backoff))
    respond(build_end_quorum_epoch_response(ctx, Errors.NONE))


def handle_end_quorum_epoch_response(ctx: RaftContext, event: ResponseReceived) -> None:
    response = event.message
    assert isinstance(response, EndQuorumEpochResponseData)
    if response.error_code != 0 or len(response.topics) != 1:
        response_failed(ctx, event.source)
        return
    for p in response.topics[0].partitions[:1]:
        error = to_error(p.error_code)
        if maybe_handle_common_response(ctx, error, p.leader_id, p.leader_epoch):
            return
        if error != Errors.NONE:
            response_failed(ctx, event.source)
            return
        st = ctx.state
        if error == Errors.NONE and isinstance(st, ResignedState):
            ctx.update_state(replace(st, unacked_voters=st.unacked_voters - {event.source}))


def poll_resigned(ctx: RaftContext, st: ResignedState, now_ms: int) -> int:
    deadline = 2**62
    for voter in sorted(st.unacked_voters):
        if ctx.requests.is_ready(voter, now_ms):
            ctx.send(voter, build_end_quorum_epoch_request(ctx, st))
        nd = ctx.requests.next_deadline_ms(voter)
        if nd is not None and nd > now_ms:
            deadline = min(deadline, nd)
    return deadline

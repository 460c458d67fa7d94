"""BeginQuorumEpoch RPC (KIP-595 §BeginQuorumEpoch; v1 per KIP-853).

Role: a new leader tells the voters about its epoch; the leader re-sends it to every voter that
has not fetched within `fetch.timeout.ms / 2` (Kafka's `beginQuorumEpochTimeoutMs`).
Invariants: a BeginQuorumEpoch of an older epoch is fenced (FENCED_LEADER_EPOCH) and never
changes state; one of the current or a newer epoch makes the receiver follow that leader.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from metaquorum.core import discovery
from metaquorum.core.effects import SendResponse
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.core.rpc_common import (
    PARTITION,
    directory_uuid,
    has_valid_cluster_id,
    is_valid_voter_key,
    maybe_handle_common_response,
    quorum_partition,
    response_failed,
    to_error,
    validate_voter_only_request,
)
from metaquorum.core.states import LeaderState
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import BeginQuorumEpochRequestData, BeginQuorumEpochResponseData

if TYPE_CHECKING:
    from metaquorum.core.node import RaftNode


def build_begin_quorum_epoch_request(
    node: RaftNode, destination: int
) -> BeginQuorumEpochRequestData:
    partition = BeginQuorumEpochRequestData.PartitionData(
        partition_index=PARTITION,
        leader_id=node.local_id,
        leader_epoch=node.epoch,
        voter_directory_id=directory_uuid(node.voter_key(destination).directory_id),
    )
    return BeginQuorumEpochRequestData(
        cluster_id=node.cluster_id,
        voter_id=destination,
        leader_endpoints=[
            BeginQuorumEpochRequestData.LeaderEndpoint(name=e.name, host=e.host, port=e.port)
            for e in node.local_endpoints
        ],
        topics=[
            BeginQuorumEpochRequestData.TopicData(
                topic_name=node.topic.name, partitions=[partition]
            )
        ],
    )


def build_begin_quorum_epoch_response(
    node: RaftNode, error: Errors
) -> BeginQuorumEpochResponseData:
    partition = BeginQuorumEpochResponseData.PartitionData(
        partition_index=PARTITION,
        error_code=int(error),
        leader_id=node.leader_id,
        leader_epoch=node.epoch,
    )
    return BeginQuorumEpochResponseData(
        error_code=0,
        topics=[
            BeginQuorumEpochResponseData.TopicData(
                topic_name=node.topic.name, partitions=[partition]
            )
        ],
    )


def handle_begin_quorum_epoch_request(node: RaftNode, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, BeginQuorumEpochRequestData)

    def respond(message: BeginQuorumEpochResponseData) -> None:
        node.emit(SendResponse(event.source, event.correlation_id, message))

    if not has_valid_cluster_id(node, request.cluster_id):
        respond(BeginQuorumEpochResponseData(error_code=int(Errors.INCONSISTENT_CLUSTER_ID)))
        return
    p = quorum_partition(request.topics, node.topic.name)
    if p is None:
        respond(BeginQuorumEpochResponseData(error_code=int(Errors.INVALID_REQUEST)))
        return
    error = validate_voter_only_request(node, p.leader_id, p.leader_epoch)
    if error != Errors.NONE:
        respond(build_begin_quorum_epoch_response(node, error))
        return
    # Kafka: the leader's endpoints from the request, else from the voter set (a voter whose
    # set lacks the new leader would otherwise follow a leader it cannot reach).
    endpoint = discovery.request_leader_endpoint(node, request.leader_endpoints)
    node.maybe_transition(p.leader_id, p.leader_epoch, endpoint)
    if not is_valid_voter_key(node, request.voter_id, p.voter_directory_id):
        respond(build_begin_quorum_epoch_response(node, Errors.INVALID_VOTER_KEY))
        return
    respond(build_begin_quorum_epoch_response(node, Errors.NONE))


def handle_begin_quorum_epoch_response(node: RaftNode, event: ResponseReceived) -> None:
    response = event.message
    assert isinstance(response, BeginQuorumEpochResponseData)
    if response.error_code != 0 or len(response.topics) != 1:
        response_failed(node, event.source)
        return
    for p in response.topics[0].partitions[:1]:
        error = to_error(p.error_code)
        handled = maybe_handle_common_response(node, error, p.leader_id, p.leader_epoch)
        if not handled and error != Errors.NONE:
            response_failed(node, event.source)


def poll_leader(node: RaftNode) -> int:
    """Send BeginQuorumEpoch to voters that have not fetched recently; the next deadline."""
    st = node.state
    assert isinstance(st, LeaderState)
    now = node.now_ms
    timeout = node.config.begin_quorum_epoch_timeout_ms
    if now < st.begin_quorum_epoch_deadline_ms:
        return st.begin_quorum_epoch_deadline_ms
    for voter in node.voters.sorted_ids():
        if voter == node.local_id:
            continue
        replica = st.data.progress.voters.get(voter)
        recently = (
            replica is not None
            and replica.last_fetch_ms >= 0
            and now - replica.last_fetch_ms < timeout
        )
        if not recently and node.requests.is_ready(voter, now):
            node.send(voter, build_begin_quorum_epoch_request(node, voter))
    deadline = now + timeout
    node.update_state(replace(st, begin_quorum_epoch_deadline_ms=deadline))
    return deadline

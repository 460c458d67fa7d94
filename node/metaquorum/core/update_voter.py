"""UpdateRaftVoter on the leader, kraft.version >= 1 (KIP-853; Kafka's `UpdateVoterHandler`).

Role: a voter whose endpoints or supported kraft.version range differ from its entry in the
voter set asks the leader to restate it. Checks in Kafka's order: cluster id; leader of the
request's epoch; a voter key with a directory id; an endpoint on the controller listener; a
sane kraft.version range; no change pending; a HW; the newest VotersRecord committed; the
range covering the finalized kraft.version; the key a voter (VOTER_NOT_FOUND). Then the
VotersRecord with that voter's entry replaced is appended and the answer goes at once (Kafka
answers an update without waiting for the commit). Every answer names the leader and its
endpoint on the controller listener.
The follower side (`should_send`, `build_request`): a voter of a kraft.version >= 1 quorum
whose entry differs sends the request to its leader, at most once per fetch timeout.
Not done here: the kraft.version 0 path (volatile voters kept in memory for the upgrade to
kraft.version 1) answers REQUEST_TIMED_OUT, as Kafka does before the upgrade is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import discovery, kraft_upgrade
from metaquorum.core.effects import SendResponse
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import LogEntry
from metaquorum.core.rpc_common import (
    directory_uuid,
    maybe_handle_common_response,
    to_error,
)
from metaquorum.core.states import FollowerState, LeaderState
from metaquorum.core.value import replace
from metaquorum.core.voter_change import change_blocked, check_voter_request
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import UpdateRaftVoterRequestData, UpdateRaftVoterResponseData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def update_voter_response(ctx: RaftContext, error: Errors) -> UpdateRaftVoterResponseData:
    """Kafka's `RaftUtil.updateVoterResponse`: the error, the leader and its endpoint."""
    leader = ctx.leader_id
    endpoint = discovery.endpoint_of(ctx, leader) if leader >= 0 else None
    return UpdateRaftVoterResponseData(
        error_code=int(error),
        current_leader=UpdateRaftVoterResponseData.CurrentLeader(
            leader_id=leader,
            leader_epoch=ctx.state.epoch,
            host="" if endpoint is None else endpoint.host,
            port=0 if endpoint is None else endpoint.port,
        ),
    )


def handle_update_raft_voter_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, UpdateRaftVoterRequestData)

    def respond(error: Errors, _message: str | None = None) -> None:
        answer = update_voter_response(ctx, error)  # UpdateRaftVoter has no error message
        ctx.emit(SendResponse(event.source, event.correlation_id, answer))

    key = check_voter_request(
        ctx,
        request.cluster_id,
        request.current_leader_epoch,
        voter_id=request.voter_id,
        directory=request.voter_directory_id,
        what="Update voter",
    )
    if not isinstance(key, ReplicaKey):
        respond(*key)
        return
    endpoints = tuple(ListenerEndpoint(x.name, x.host, x.port) for x in request.listeners)
    low = request.kraft_version_feature.min_supported_version
    high = request.kraft_version_feature.max_supported_version
    if not any(e.name == ctx.local.listener_name for e in endpoints) or low < 0 or high < low:
        respond(Errors.INVALID_REQUEST)
        return
    kraft = ctx.control.latest_kraft_version()
    if kraft < 1:
        # Kafka keeps a kraft.version 0 quorum's updates in memory, for the upgrade.
        if ctx.high_watermark is None:
            respond(Errors.REQUEST_TIMED_OUT)
        elif not low <= kraft <= high:
            respond(Errors.INVALID_REQUEST)
        else:
            respond(kraft_upgrade.update_volatile_voter(ctx, VoterNode(key, endpoints, low, high)))
        return
    if change_blocked(ctx, "updating") is not None:
        respond(Errors.REQUEST_TIMED_OUT)
        return
    if not low <= kraft <= high:
        respond(Errors.INVALID_REQUEST)
        return
    updated = ctx.voters.update_voter(VoterNode(key, endpoints, low, high))
    if updated is None:
        respond(Errors.VOTER_NOT_FOUND)
        return
    st = ctx.state
    assert isinstance(st, LeaderState)
    offset = ctx.log.end_offset
    ctx.append_as_leader([LogEntry.of_control(offset, st.epoch, updated.to_voters_record())])
    respond(Errors.NONE)


def should_send(ctx: RaftContext, st: FollowerState, now_ms: int) -> bool:
    """Kafka's `shouldSendUpdateVoteRequest`: from kraft.version 1, when this voter's entry in
    the newest voter set differs from what it runs with; on kraft.version 0, once to every new
    leader (it keeps the voters in memory for the upgrade). At most once per fetch timeout."""
    if (
        now_ms < st.update_voter_next_ms
        or not ctx.local.endpoints
        or ctx.local.directory_id is None
        or not ctx.is_voter
    ):
        return False
    if ctx.control.latest_kraft_version() >= 1:
        return ctx.voters.voter_node_needs_update(ctx.local.voter_node())
    return not st.has_updated_leader


def build_request(ctx: RaftContext) -> UpdateRaftVoterRequestData:
    local = ctx.local.voter_node()
    return UpdateRaftVoterRequestData(
        cluster_id=ctx.local.cluster_id,
        current_leader_epoch=ctx.state.epoch,
        voter_id=ctx.local.id,
        voter_directory_id=directory_uuid(ctx.local.directory_id),
        listeners=[
            UpdateRaftVoterRequestData.Listener(name=e.name, host=e.host, port=e.port)
            for e in local.endpoints
        ],
        kraft_version_feature=UpdateRaftVoterRequestData.KRaftVersionFeature(
            min_supported_version=local.kraft_version_min,
            max_supported_version=local.kraft_version_max,
        ),
    )


def handle_update_raft_voter_response(ctx: RaftContext, event: ResponseReceived) -> None:
    """Kafka's `handleUpdateVoterResponse`: a newer leader or epoch moves this replica; any
    other answer waits for the next period (the VotersRecord shows whether it took)."""
    response = event.message
    assert isinstance(response, UpdateRaftVoterResponseData)
    leader = response.current_leader
    error = to_error(response.error_code)
    if error == Errors.NONE and (leader.leader_epoch, leader.leader_id) == (
        ctx.state.epoch,
        ctx.leader_id,
    ):
        st = ctx.state
        if isinstance(st, FollowerState):
            ctx.update_state(replace(st, has_updated_leader=True))
    maybe_handle_common_response(ctx, error, leader.leader_id, leader.leader_epoch)

"""AddRaftVoter on the leader (KIP-853; Kafka's `AddVoterHandler`).

Role: validate the request in Kafka's order (cluster id; leader of this epoch; a voter key with
a directory id; an endpoint on the controller listener; no change pending; a HW, i.e. a record
of this epoch committed; kraft.version >= 1; the newest VotersRecord committed; the id not
already voting: DUPLICATE_VOTER), then ask the new voter for its ApiVersions; on the answer,
check that its kraft.version range covers the finalized one and that it has caught up as an
observer, append the VotersRecord with it added, and answer once the HW passes that record (or
at once when AckWhenCommitted is false).
Invariants: one change at a time (core/voter_change.py); nothing is appended unless every check
passed at the moment of the append; an abandoned or failed change answers exactly once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.effects import SendResponse
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import LogEntry
from metaquorum.core.pending_voter_change import ChangeKind, PendingVoterChange
from metaquorum.core.states import LeaderState
from metaquorum.core.voter_change import (
    change_blocked,
    check_voter_request,
    finish,
)
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    AddRaftVoterResponseData,
    ApiVersionsRequestData,
    ApiVersionsResponseData,
)

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext

KRAFT_VERSION_FEATURE = "kraft.version"


def add_voter_response(error: Errors, message: str | None = None) -> AddRaftVoterResponseData:
    return AddRaftVoterResponseData(error_code=int(error), error_message=message)


def handle_add_raft_voter_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, AddRaftVoterRequestData)

    def respond(error: Errors, message: str | None = None) -> None:
        response = add_voter_response(error, message)
        ctx.emit(SendResponse(event.source, event.correlation_id, response))

    key = check_voter_request(
        ctx,
        request.cluster_id,
        ctx.state.epoch,
        voter_id=request.voter_id,
        directory=request.voter_directory_id,
        what="Add voter",
    )
    if not isinstance(key, ReplicaKey):
        respond(*key)
        return
    endpoints = tuple(ListenerEndpoint(x.name, x.host, x.port) for x in request.listeners)
    if not any(e.name == ctx.local.listener_name for e in endpoints):
        respond(
            Errors.INVALID_REQUEST,
            "Add voter request didn't include the endpoint for the listener "
            f"{ctx.local.listener_name}",
        )
        return
    blocked = change_blocked(ctx, "adding")
    if blocked is not None:
        respond(*blocked)
        return
    if request.voter_id in ctx.voters:
        respond(Errors.DUPLICATE_VOTER, f"The voter id for {key} is already a voter")
        return
    st = ctx.state
    assert isinstance(st, LeaderState)
    st.data.pending_change = PendingVoterChange(
        ChangeKind.ADD,
        key,
        event.source,
        event.correlation_id,
        ctx.now_ms + ctx.config.request_timeout_ms,
        endpoints,
        request.ack_when_committed,
    )
    endpoint = next(e for e in endpoints if e.name == ctx.local.listener_name)
    ctx.send(request.voter_id, ApiVersionsRequestData(), endpoint=endpoint)


def handle_api_versions_response(ctx: RaftContext, event: ResponseReceived) -> None:
    """Kafka's `AddVoterHandler.handleApiVersionsResponse`."""
    response = event.message
    assert isinstance(response, ApiVersionsResponseData)
    st = ctx.state
    if not isinstance(st, LeaderState):
        return
    change = st.data.pending_change
    if (
        change is None
        or change.kind is not ChangeKind.ADD
        or change.key.id != event.source
        or change.last_offset is not None
    ):
        return
    if response.error_code != 0:
        finish(ctx, Errors.REQUEST_TIMED_OUT, "ApiVersions of the new voter returned an error")
        return
    kraft = ctx.control.latest_kraft_version()
    feature = next(
        (f for f in response.supported_features if f.name == KRAFT_VERSION_FEATURE), None
    )
    if feature is None or not feature.min_version <= kraft <= feature.max_version:
        finish(
            ctx,
            Errors.INVALID_REQUEST,
            f"the new voter {change.key} does not support the finalized kraft.version {kraft}",
        )
        return
    if not st.data.progress.is_observer_caught_up(change.key, ctx.now_ms):
        finish(ctx, Errors.REQUEST_TIMED_OUT, f"the new voter {change.key} is lagging behind")
        return
    voter = VoterNode(change.key, change.endpoints, feature.min_version, feature.max_version)
    new_voters = ctx.voters.add_voter(voter)
    assert new_voters is not None  # checked at the request; one change at a time since
    offset = ctx.log.end_offset
    ctx.append_as_leader([LogEntry.of_control(offset, st.epoch, new_voters.to_voters_record())])
    change.last_offset = offset
    if not change.ack_when_committed:
        change.answered = True
        answer = add_voter_response(Errors.NONE)
        ctx.emit(SendResponse(change.source, change.correlation_id, answer))

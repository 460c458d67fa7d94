"""RemoveRaftVoter on the leader (KIP-853; Kafka's `RemoveVoterHandler`).

Role: validate in Kafka's order (cluster id; leader of this epoch; a voter key with a directory
id; no change pending; a HW, i.e. a record of this epoch committed; kraft.version >= 1; the
newest VotersRecord committed; the key a voter and not the last one: VOTER_NOT_FOUND), append
the VotersRecord without it, and answer when the HW passes that record. Removing the leader
itself: it keeps leading without counting itself toward the HW or check-quorum, and resigns once
the change commits (core/voter_change.py `on_high_watermark`).
Invariants: one change at a time; the new set differs from the old by exactly one voter; the
answer is sent exactly once (commit, expiry after `request.timeout.ms`, or losing leadership).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.effects import SendResponse
from metaquorum.core.events import RequestReceived
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import LogEntry
from metaquorum.core.pending_voter_change import ChangeKind, PendingVoterChange
from metaquorum.core.states import LeaderState
from metaquorum.core.voter_change import (
    change_blocked,
    check_voter_request,
)
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import RemoveRaftVoterRequestData, RemoveRaftVoterResponseData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def handle_remove_raft_voter_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, RemoveRaftVoterRequestData)

    def respond(error: Errors, message: str | None = None) -> None:
        response = RemoveRaftVoterResponseData(error_code=int(error), error_message=message)
        ctx.emit(SendResponse(event.source, event.correlation_id, response))

    key = check_voter_request(
        ctx,
        request.cluster_id,
        ctx.state.epoch,
        voter_id=request.voter_id,
        directory=request.voter_directory_id,
        what="Remove voter",
    )
    if not isinstance(key, ReplicaKey):
        respond(*key)
        return
    blocked = change_blocked(ctx, "removing")
    if blocked is not None:
        respond(*blocked)
        return
    new_voters = ctx.voters.remove_voter(key)
    if new_voters is None:
        respond(
            Errors.VOTER_NOT_FOUND,
            f"Cannot remove voter {key} from the set of voters {ctx.voters.sorted_ids()}",
        )
        return
    st = ctx.state
    assert isinstance(st, LeaderState)
    offset = ctx.log.end_offset
    st.data.pending_change = PendingVoterChange(
        ChangeKind.REMOVE,
        key,
        event.source,
        event.correlation_id,
        ctx.now_ms + ctx.config.request_timeout_ms,
        last_offset=offset,
    )
    ctx.append_as_leader([LogEntry.of_control(offset, st.epoch, new_voters.to_voters_record())])

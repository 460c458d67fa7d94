"""The leader's one pending voter change (KIP-853; Kafka's `AddVoterHandlerState` /
`RemoveVoterHandlerState` and `LeaderState.isOperationPending`).

Role: what an AddRaftVoter or RemoveRaftVoter request left on the leader while it runs: whom it
changes, whom to answer, whether the answer waits for the commit, the offset of the VotersRecord
once appended, and when the operation expires (`controller.quorum.request.timeout.ms`).
Invariants: at most one change is pending per leader (a second gets REQUEST_TIMED_OUT, as in
Kafka); the answer is sent exactly once (commit, error, expiry or losing leadership); expiring a
change never lets another in while its record is uncommitted: a new request also needs the
newest VotersRecord below the HW (the handlers check it), so the state can go but the fence
stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.effects import SendResponse
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.pending_voter_change import ChangeKind
from metaquorum.core.rpc_common import (
    has_valid_cluster_id,
    replica_key,
    validate_leader_only_request,
)
from metaquorum.core.states import LeaderState
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import AddRaftVoterResponseData, RemoveRaftVoterResponseData
from metaquorum.protocol.types import Uuid

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def check_voter_request(
    ctx: RaftContext,
    cluster_id: str | None,
    epoch: int,
    *,
    voter_id: int,
    directory: Uuid,
    what: str,
) -> ReplicaKey | tuple[Errors, str | None]:
    """The checks every Add/Remove/UpdateRaftVoter starts with, in Kafka's order: cluster id,
    leader of `epoch`, a voter key with a directory id. The key, or the error to answer."""
    if not has_valid_cluster_id(ctx, cluster_id):
        return Errors.INCONSISTENT_CLUSTER_ID, f"cluster id {cluster_id!r} is not ours"
    error = validate_leader_only_request(ctx, epoch)
    if error != Errors.NONE:
        return error, None
    key = replica_key(voter_id, directory)
    if voter_id < 0 or key.directory_id is None:
        return Errors.INVALID_REQUEST, f"{what} request didn't include a valid voter"
    return key


def change_blocked(ctx: RaftContext, doing: str) -> tuple[Errors, str] | None:
    """The checks Add/RemoveRaftVoter share, in Kafka's order; the error to answer, or None."""
    st = ctx.state
    assert isinstance(st, LeaderState)
    expire_pending_change(ctx)
    if st.data.pending_change is not None:
        return (
            Errors.REQUEST_TIMED_OUT,
            "Request timed out waiting for leader to handle previous voter change request",
        )
    hw = ctx.high_watermark
    if hw is None:
        return (
            Errors.REQUEST_TIMED_OUT,
            "Request timed out waiting for leader to establish HWM and fence previous voter "
            "changes",
        )
    kraft = ctx.control.latest_kraft_version()
    if kraft < 1:
        return (
            Errors.UNSUPPORTED_VERSION,
            f"Cluster doesn't support {doing} voter because the kraft.version feature is {kraft}",
        )
    at = ctx.control.latest_voters_offset()
    if at >= hw:
        return (
            Errors.REQUEST_TIMED_OUT,
            f"Request timed out waiting for voters to commit the latest voter change at {at} "
            f"with HWM {hw}",
        )
    return None


def expire_pending_change(ctx: RaftContext) -> None:
    st = ctx.state
    if isinstance(st, LeaderState):
        change = st.data.pending_change
        if change is not None and change.expired(ctx.now_ms):
            finish(ctx, Errors.REQUEST_TIMED_OUT, "the voter change timed out")


def finish(ctx: RaftContext, error: Errors, message: str | None = None) -> None:
    """Answer the pending change (unless already answered) and clear it."""
    st = ctx.state
    assert isinstance(st, LeaderState)
    change = st.data.pending_change
    if change is None:
        return
    st.data.pending_change = None
    if change.answered:
        return
    response: object
    if change.kind is ChangeKind.ADD:
        response = AddRaftVoterResponseData(error_code=int(error), error_message=message)
    else:
        response = RemoveRaftVoterResponseData(error_code=int(error), error_message=message)
    ctx.emit(SendResponse(change.source, change.correlation_id, response))


def on_high_watermark(ctx: RaftContext) -> None:
    """Kafka's `highWatermarkUpdated` of both handlers: a committed change is answered; a
    leader no longer in the committed voter set resigns."""
    st = ctx.state
    if not isinstance(st, LeaderState):
        return
    change = st.data.pending_change
    if change is not None and change.committed(ctx.high_watermark):
        finish(ctx, Errors.NONE)
    hw = ctx.high_watermark
    if not ctx.is_voter and hw is not None and ctx.control.latest_voters_offset() < hw:
        # Whether or not this leader's RemoveRaftVoter is still pending (it may have expired,
        # or an earlier leader appended the record): once the set without it is committed it
        # resigns (Kafka ties this to the pending removal only; the simulator's
        # `removed-leader-resigns` found leaders that kept leading as non-voters).
        st.data.resign_requested = True  # `poll_leader` resigns (Kafka's requestResign)

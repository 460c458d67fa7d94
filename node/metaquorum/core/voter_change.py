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

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from metaquorum.core.effects import SendResponse
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.rpc_common import (
    has_valid_cluster_id,
    replica_key,
    validate_leader_only_request,
)
from metaquorum.core.states import LeaderState
from metaquorum.core.voter_set import ListenerEndpoint
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import AddRaftVoterResponseData, RemoveRaftVoterResponseData
from metaquorum.protocol.types import Uuid

if TYPE_CHECKING:
    from metaquorum.core.node import RaftNode


class ChangeKind(Enum):
    ADD = "add"
    REMOVE = "remove"


@dataclass(slots=True)
class PendingVoterChange:
    kind: ChangeKind
    key: ReplicaKey
    source: int  # who asked, and under which correlation id: answered exactly once
    correlation_id: int
    expire_ms: int
    endpoints: tuple[ListenerEndpoint, ...] = ()
    ack_when_committed: bool = True
    last_offset: int | None = None  # the VotersRecord's offset, once appended
    answered: bool = False  # AddRaftVoter with AckWhenCommitted false: answered at append

    def expired(self, now_ms: int) -> bool:
        return now_ms >= self.expire_ms

    def committed(self, high_watermark: int | None) -> bool:
        return (
            self.last_offset is not None
            and high_watermark is not None
            and high_watermark > self.last_offset
        )


def check_voter_request(
    node: RaftNode,
    cluster_id: str | None,
    epoch: int,
    *,
    voter_id: int,
    directory: Uuid,
    what: str,
) -> ReplicaKey | tuple[Errors, str | None]:
    """The checks every Add/Remove/UpdateRaftVoter starts with, in Kafka's order: cluster id,
    leader of `epoch`, a voter key with a directory id. The key, or the error to answer."""
    if not has_valid_cluster_id(node, cluster_id):
        return Errors.INCONSISTENT_CLUSTER_ID, f"cluster id {cluster_id!r} is not ours"
    error = validate_leader_only_request(node, epoch)
    if error != Errors.NONE:
        return error, None
    key = replica_key(voter_id, directory)
    if voter_id < 0 or key.directory_id is None:
        return Errors.INVALID_REQUEST, f"{what} request didn't include a valid voter"
    return key


def change_blocked(node: RaftNode, doing: str) -> tuple[Errors, str] | None:
    """The checks Add/RemoveRaftVoter share, in Kafka's order; the error to answer, or None."""
    st = node.state
    assert isinstance(st, LeaderState)
    expire_pending_change(node)
    if st.data.pending_change is not None:
        return (
            Errors.REQUEST_TIMED_OUT,
            "Request timed out waiting for leader to handle previous voter change request",
        )
    hw = node.high_watermark
    if hw is None:
        return (
            Errors.REQUEST_TIMED_OUT,
            "Request timed out waiting for leader to establish HWM and fence previous voter "
            "changes",
        )
    kraft = node.control.latest_kraft_version()
    if kraft < 1:
        return (
            Errors.UNSUPPORTED_VERSION,
            f"Cluster doesn't support {doing} voter because the kraft.version feature is {kraft}",
        )
    at = node.control.latest_voters_offset()
    if at >= hw:
        return (
            Errors.REQUEST_TIMED_OUT,
            f"Request timed out waiting for voters to commit the latest voter change at {at} "
            f"with HWM {hw}",
        )
    return None


def expire_pending_change(node: RaftNode) -> None:
    st = node.state
    if isinstance(st, LeaderState):
        change = st.data.pending_change
        if change is not None and change.expired(node.now_ms):
            finish(node, Errors.REQUEST_TIMED_OUT, "the voter change timed out")


def finish(node: RaftNode, error: Errors, message: str | None = None) -> None:
    """Answer the pending change (unless already answered) and clear it."""
    st = node.state
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
    node.emit(SendResponse(change.source, change.correlation_id, response))


def on_high_watermark(node: RaftNode) -> None:
    """Kafka's `highWatermarkUpdated` of both handlers: a committed change is answered; a
    leader no longer in the committed voter set resigns."""
    st = node.state
    if not isinstance(st, LeaderState):
        return
    change = st.data.pending_change
    if change is not None and change.committed(node.high_watermark):
        finish(node, Errors.NONE)
    hw = node.high_watermark
    if not node.is_voter and hw is not None and node.control.latest_voters_offset() < hw:
        # Whether or not this leader's RemoveRaftVoter is still pending (it may have expired,
        # or an earlier leader appended the record): once the set without it is committed it
        # resigns (Kafka ties this to the pending removal only; the simulator's
        # `removed-leader-resigns` found leaders that kept leading as non-voters).
        st.data.resign_requested = True  # `poll_leader` resigns (Kafka's requestResign)

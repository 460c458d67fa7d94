"""Shared pieces of the KRaft RPC handlers (Kafka's `RaftUtil` and the common response path).

Role: the single-partition (`__cluster_metadata`-0) validation every RPC does, the cluster id
check, and `maybe_handle_common_response` (stale epochs, newer epochs and leader hints in any
response move the replica forward). Invariants: a request is only ever answered about
partition 0 of `__cluster_metadata`; a response from an older epoch never changes state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol, TypeVar

from metaquorum.core.discovery import learn_leader_endpoint
from metaquorum.core.ids import ReplicaKey
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.types import Uuid

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext
    from metaquorum.core.voter_set import ListenerEndpoint

PARTITION = 0

T = TypeVar("T")
P = TypeVar("P")


class _IndexedPartition(Protocol):
    @property
    def partition_index(self) -> int: ...


IP = TypeVar("IP", bound=_IndexedPartition)


class _NamedTopic(Protocol[IP]):
    @property
    def topic_name(self) -> str: ...

    @property
    def partitions(self) -> list[IP]: ...


def single_partition(
    topics: Sequence[T],
    is_metadata_topic: Callable[[T], bool],
    partitions: Callable[[T], Sequence[P]],
    index: Callable[[P], int],
) -> P | None:
    """Kafka's `RaftUtil.hasValidTopicPartition`: exactly one topic, the metadata topic, with
    exactly one partition, partition 0; that partition, else None (the caller answers its
    RPC's error: INVALID_REQUEST, or UNKNOWN_TOPIC_OR_PARTITION for DescribeQuorum)."""
    if len(topics) != 1 or not is_metadata_topic(topics[0]):
        return None
    parts = partitions(topics[0])
    if len(parts) != 1 or index(parts[0]) != PARTITION:
        return None
    return parts[0]


def quorum_partition(topics: Sequence[_NamedTopic[IP]], topic_name: str) -> IP | None:
    """`single_partition` for the RPCs whose topics have `topic_name` and partitions have
    `partition_index` (Vote, BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum)."""
    return single_partition(
        topics, lambda t: t.topic_name == topic_name, lambda t: t.partitions, _partition_index
    )


def _partition_index(p: _IndexedPartition) -> int:
    return p.partition_index


def directory_uuid(directory_id: str | None) -> Uuid:
    """A replica key's directory id on the wire (ZERO = none, Kafka's NO_DIRECTORY_ID)."""
    return Uuid.ZERO if directory_id is None else _parse_uuid(directory_id)


def replica_key(replica_id: int, directory: Uuid) -> ReplicaKey:
    """Kafka's `ReplicaKey.of(id, directoryId)`: a ZERO directory id means none. (By its two
    halves, not `Uuid.__eq__` / `__hash__`: those are interpreted even in the compiled build, and
    every Fetch names a directory.)"""
    msb, lsb = directory.most_significant_bits, directory.least_significant_bits
    return ReplicaKey(replica_id, None if msb == 0 and lsb == 0 else _uuid_text(msb, lsb))


# A quorum has a handful of directory ids and every Fetch names one: parse and print each once
# (base64 both ways was ~2% of a node's time at one client, issue 28). `Uuid` is immutable.
@lru_cache(maxsize=256)
def _parse_uuid(text: str) -> Uuid:
    return Uuid.from_string(text)


@lru_cache(maxsize=256)
def _uuid_text(msb: int, lsb: int) -> str:
    return str(Uuid(msb, lsb))


def is_valid_voter_key(ctx: RaftContext, voter_id: int, directory: Uuid) -> bool:
    """Kafka's `isValidVoterKey`: a request addressed to a voter key (VoterId >= 0) must name
    this replica: its id and, when the key has a directory id, this replica's."""
    if voter_id < 0:
        return True
    if voter_id != ctx.local.id:
        return False
    return directory == Uuid.ZERO or str(directory) == ctx.local.directory_id


def has_valid_cluster_id(ctx: RaftContext, cluster_id: str | None) -> bool:
    """Kafka does not enforce the cluster id when the request leaves it null."""
    return cluster_id is None or cluster_id == ctx.local.cluster_id


def request_prelude(
    ctx: RaftContext,
    cluster_id: str | None,
    partition: P | None,
    reject: Callable[[Errors], None],
) -> P | None:
    """The checks every single-partition KRaft request starts with, in Kafka's order
    (`handleXRequest`: `hasValidClusterId`, then `hasValidTopicPartition`): the request's
    partition, or None after `reject` answered INCONSISTENT_CLUSTER_ID or INVALID_REQUEST as
    the RPC's top-level error. The epoch checks come next (`validate_voter_only_request` or
    `validate_leader_only_request`), answered in the RPC's partition-level form."""
    if not has_valid_cluster_id(ctx, cluster_id):
        reject(Errors.INCONSISTENT_CLUSTER_ID)
        return None
    if partition is None:
        reject(Errors.INVALID_REQUEST)
        return None
    return partition


def validate_voter_only_request(ctx: RaftContext, remote_id: int, remote_epoch: int) -> Errors:
    """Kafka's `validateVoterOnlyRequest`."""
    if remote_epoch < ctx.state.epoch:
        return Errors.FENCED_LEADER_EPOCH
    if remote_id < 0:
        return Errors.INVALID_REQUEST
    return Errors.NONE


def validate_leader_only_request(ctx: RaftContext, request_epoch: int) -> Errors:
    """Kafka's `validateLeaderOnlyRequest`."""
    from metaquorum.core.states import LeaderState

    if request_epoch < ctx.state.epoch:
        return Errors.FENCED_LEADER_EPOCH
    if request_epoch > ctx.state.epoch:
        return Errors.UNKNOWN_LEADER_EPOCH
    if not isinstance(ctx.state, LeaderState):
        return Errors.NOT_LEADER_OR_FOLLOWER
    return Errors.NONE


def maybe_handle_common_response(
    ctx: RaftContext,
    error: Errors,
    leader_id: int,
    epoch: int,
    endpoint: ListenerEndpoint | None = None,
) -> bool:
    """Kafka's `maybeHandleCommonResponse`; True when the response needs no further handling.

    A response of the current epoch that names a leader this replica did not know moves it to
    Follower and, without an error, is then processed by the caller (an observer discovers
    the leader and appends in the same Fetch: no extra round trip)."""
    if epoch < ctx.state.epoch or error == Errors.UNKNOWN_LEADER_EPOCH:
        return True
    if epoch == ctx.state.epoch and leader_id >= 0:
        learn_leader_endpoint(ctx, leader_id, epoch, endpoint)
    if epoch > ctx.state.epoch or error in (
        Errors.FENCED_LEADER_EPOCH,
        Errors.NOT_LEADER_OR_FOLLOWER,
    ):
        ctx.maybe_transition(leader_id, epoch, endpoint)
        return True
    if leader_id >= 0 and ctx.state.election(ctx.local.id).leader_id < 0:
        ctx.maybe_transition(leader_id, epoch, endpoint)
        return error != Errors.NONE
    return False


def response_failed(ctx: RaftContext, destination: int) -> None:
    """Kafka's `handleTopLevelError` / `handleUnexpectedError` return false: the request manager
    counts the request as failed, so the next one goes out only after
    `controller.quorum.retry.backoff.ms` (a misconfigured peer is not re-sent to on every reply)."""
    ctx.requests.back_off(destination, ctx.now_ms)


# Every code's member, looked up without `Errors(code)` (EnumMeta.__call__ and __new__: two
# interpreted frames, ~4 per committed write; docs/performance.md round 11).
_ERRORS: dict[int, Errors] = {int(e): e for e in Errors}


def to_error(code: int) -> Errors:
    """An error code from the wire; unknown codes become UNKNOWN_SERVER_ERROR."""
    return _ERRORS.get(code, Errors.UNKNOWN_SERVER_ERROR)

"""Effects the core asks its driver to perform, in order (DESIGN.md §4).

Role: the only way the core acts on the world. The driver performs them in list order:
`PersistElectionState` must be durable before any later effect of the same step is performed
(a vote reply or a leader's first message depends on it). Log effects mirror the core's
`RaftLog`: `AppendEntries` then `FlushLog`, whose completion comes back as a `Flushed` event;
nothing the core sends ever acknowledges an offset that has not come back as `Flushed`.
"""

from __future__ import annotations

from typing import TypeAlias

from metaquorum.core.log import LogEntry, Snapshot
from metaquorum.core.states import ElectionState
from metaquorum.core.value import value
from metaquorum.core.voter_set import ListenerEndpoint, VoterSet

# Any Kafka request or response data class. A named alias, not a bare `object`: mypyc (which can
# compile this core; docs/performance.md) resolves a dataclass field's annotation by name.
Message: TypeAlias = object


@value
class SendRequest:
    """A request to `destination`; `endpoint` names where to reach a replica that is not a
    voter (KIP-853: the voter being added), so the driver never needs a static list."""

    destination: int
    correlation_id: int
    message: Message
    endpoint: ListenerEndpoint | None = None


@value
class AbandonRequest:
    """The core gave up on request `correlation_id` to `destination` (its timeout, a state
    change, a newer request there; core/request_manager.py): the driver closes the connection
    it is still in flight on, so its response, which the core would ignore, never arrives on
    the connection the next request uses (the leader's read lease counts a Fetch that follows
    a response on one connection as proof the response was taken; core/read_lease.py)."""

    destination: int
    correlation_id: int


@value
class SendResponse:
    destination: int
    correlation_id: int
    message: Message
    entries: tuple[LogEntry, ...] = ()


@value
class PersistElectionState:
    election: ElectionState


@value
class AppendEntries:
    entries: tuple[LogEntry, ...]


@value
class TruncateLog:
    offset: int


@value
class FlushLog:
    offset: int


@value
class WriteSnapshot:
    """Persist `snapshot` (durably, before later effects), then drop the log below its end."""

    snapshot: Snapshot


@value
class InstallSnapshot:
    """A follower fetched `snapshot`: persist it durably and restart the log at its end."""

    snapshot: Snapshot


@value
class HighWatermarkAdvanced:
    """CommitAdvanced: everything below `high_watermark` is committed."""

    high_watermark: int


@value
class LeaderChanged:
    leader_id: int
    epoch: int


@value
class VotersChanged:
    """The voter set as of the log's end changed (KIP-853: a VotersRecord appended, truncated
    away or loaded from a snapshot): the driver re-points its peer connections and reports
    these voters and endpoints (DescribeQuorum, DescribeCluster). Not emitted for the set the
    node starts with, which its driver chose."""

    voters: VoterSet


@value
class KRaftVersionUpgrade:
    """The outcome of `UpgradeKRaftVersion`: `error` is None when accepted (the records are
    appended; they take effect at once, like any control record) or a no-op."""

    version: int
    error: str | None


@value
class AppendCommitted:
    append_id: int
    last_offset: int


@value
class AppendFailed:
    append_id: int
    reason: str


Effect = (
    SendRequest
    | AbandonRequest
    | SendResponse
    | PersistElectionState
    | AppendEntries
    | TruncateLog
    | FlushLog
    | WriteSnapshot
    | InstallSnapshot
    | HighWatermarkAdvanced
    | LeaderChanged
    | VotersChanged
    | KRaftVersionUpgrade
    | AppendCommitted
    | AppendFailed
)


@value
class Step:
    effects: list[Effect]
    next_deadline_ms: int

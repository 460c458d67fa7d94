"""Events the driver hands to the core (DESIGN.md §4: events in, effects out).

Role: everything that can happen to a replica, as frozen slotted dataclasses. The driver
(asyncio runtime or simulator) creates them; `RaftNode.handle(event, now_ms)` consumes them.
Invariants: events carry decoded message dataclasses and log entries, never bytes; a
response event names the correlation id of the request it answers, so stale or duplicated
responses can be told apart.
"""

from __future__ import annotations

from typing import TypeAlias

from metaquorum.core.log import LogEntry
from metaquorum.core.value import value

# Any Kafka request or response data class. A named alias, not a bare `object`: mypyc (which can
# compile this core; docs/performance.md) resolves a dataclass field's annotation by name.
Message: TypeAlias = object


@value
class Poll:
    """A deadline returned by the previous step has passed (or the driver just wants a poll)."""


@value
class RequestReceived:
    source: int
    correlation_id: int
    message: Message


@value
class ResponseReceived:
    source: int
    correlation_id: int
    message: Message
    entries: tuple[LogEntry, ...] = ()


@value
class RequestFailed:
    """The connection to `destination` failed before a response came (not a timeout)."""

    destination: int
    correlation_id: int


@value
class Flushed:
    """Storage made everything below `offset` durable."""

    offset: int


@value
class ClientAppend:
    """Append `values` as one unit; completes with `AppendCommitted` or `AppendFailed`."""

    append_id: int
    values: tuple[bytes, ...]


@value
class CreateSnapshot:
    """The state machine snapshotted everything below `end_offset` (<= the HW) as `payload`."""

    end_offset: int
    payload: bytes


@value
class ConfirmReads:
    """A consumer read waits on this leader: answer the voters' parked fetches now, so their
    next Fetch confirms it still leads (the read index, core/read_index.py)."""


@value
class Resign:
    """A leader resigns now and tells the voters (EndQuorumEpoch); Kafka's `resign(epoch)`."""


@value
class Shutdown:
    """Kafka's `KafkaRaftClient.shutdown`: begin a graceful shutdown. A leader resigns and
    stays Resigned (still granting pre-votes and votes of a newer epoch) until another leader
    is known; no state starts a new election. `RaftNode.shutdown_complete` says when the
    node may exit; the runtime bounds the wait."""


@value
class UpgradeKRaftVersion:
    """Kafka's `upgradeKRaftVersion(epoch, version, validateOnly)`: a leader of this epoch
    upgrades kraft.version (0 -> 1, KIP-853); the outcome comes back as `KRaftVersionUpgrade`."""

    epoch: int
    version: int
    validate_only: bool = False


Event = (
    Poll
    | RequestReceived
    | ResponseReceived
    | RequestFailed
    | Flushed
    | ClientAppend
    | CreateSnapshot
    | Resign
    | ConfirmReads
    | Shutdown
    | UpgradeKRaftVersion
)

"""Identifiers and positions of the KRaft core: node ids, epochs, offsets (KIP-595).

Invariants: `NodeId`, `Epoch` and `Offset` are plain ints at runtime (NewTypes), so they cost
nothing; `OffsetAndEpoch` orders by epoch first, then offset, exactly like Kafka's
`OffsetAndEpoch.compareTo`, which is the "log is at least as up to date" rule of the Vote RPC.
`ReplicaKey` is Kafka's (id, optional directory id) pair (KIP-853).
"""

from __future__ import annotations

from typing import NewType

from metaquorum.core.value import value

NodeId = NewType("NodeId", int)
Epoch = NewType("Epoch", int)
Offset = NewType("Offset", int)

NO_LEADER = NodeId(-1)
NO_EPOCH = Epoch(-1)


@value
class OffsetAndEpoch:
    """A log position compared as (epoch, offset): Kafka's `OffsetAndEpoch.compareTo`. (A
    `@value` with its order written out, as `order=True` would: a frozen dataclass's `__init__`
    is several times slower, and the compiled build compiles these, issue 28.)"""

    epoch: int
    offset: int

    def __lt__(self, other: OffsetAndEpoch) -> bool:
        return (self.epoch, self.offset) < (other.epoch, other.offset)

    def __le__(self, other: OffsetAndEpoch) -> bool:
        return (self.epoch, self.offset) <= (other.epoch, other.offset)

    def __gt__(self, other: OffsetAndEpoch) -> bool:
        return (self.epoch, self.offset) > (other.epoch, other.offset)

    def __ge__(self, other: OffsetAndEpoch) -> bool:
        return (self.epoch, self.offset) >= (other.epoch, other.offset)

    def __str__(self) -> str:
        return f"(offset={self.offset}, epoch={self.epoch})"


@value
class ReplicaKey:
    """A replica's id and, from KIP-853 on, its directory id (None when unknown)."""

    id: int
    directory_id: str | None = None

    def matches(self, other: ReplicaKey) -> bool:
        """Kafka 4.3's voted-key match, `self` being the stored vote: same id, and the same
        directory id unless the vote was stored without one (kraft.version 0). A candidate
        without a directory id does not match a vote stored with one."""
        if self.id != other.id:
            return False
        return self.directory_id is None or self.directory_id == other.directory_id

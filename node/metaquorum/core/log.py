"""The in-memory model of the replicated log that the core reasons about (KIP-595 §Fetch).

Role: the core's view of its own log: entries `(offset, epoch, value)`, the log end offset
(LEO), the flushed offset, and the epoch start offsets (Kafka's leader-epoch cache) used for
`DivergingEpoch`, the end-offset-for-epoch lookup and follower truncation. Storage (or the
simulator's disk) mirrors it from the `AppendEntries`/`TruncateLog`/`FlushLog` effects; the core
never serialises records. Control records are typed (Kafka's generated record classes, KIP-595,
KIP-630, KIP-853); `listeners` (`LogChangeListener`) see every append, truncation and snapshot.

Invariants:
- offsets are dense from `start_offset`; epochs never decrease along the log;
- `flushed_offset <= end_offset` always (a truncation pulls it down);
- `epoch_starts` lists (epoch, first offset) in increasing order, one entry per epoch present.

Memory: a data entry is kept as its value bytes alone (its offset is its position, its epoch is
in `epoch_starts`) and rebuilt as a `LogEntry` when read; only control entries stay objects.
Bytes are not tracked by CPython's cyclic GC, so a long log adds no work to a full collection:
with one `LogEntry` per record a node at 20,000 records/s held ~200k tracked objects and paused
50-150 ms in every full collection (docs/performance.md, round 14).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from enum import Enum
from operator import itemgetter
from typing import Protocol

from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.value import value
from metaquorum.protocol.control_types import MESSAGE_OF, ControlMessage
from metaquorum.protocol.messages import LeaderChangeMessage


class EntryKind(Enum):
    """Data, or the type of a control record (the ids of Kafka's `ControlRecordType`)."""

    DATA = -1
    UNKNOWN_CONTROL = -2  # a control type this version does not know (Kafka ignores it)
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


# The typed value of each control entry: Kafka's generated record class of its type.
CONTROL_KIND: dict[type[object], EntryKind] = {
    cls: EntryKind(int(kind)) for kind, cls in MESSAGE_OF.items()
}


@value
class LogEntry:
    """One record of the replicated log, as the core sees it (no bytes format).

    A data entry carries its `value`; a control entry its typed record in `control` (Kafka's
    generated class: LeaderChangeMessage, KRaftVersionRecord, VotersRecord, ...), and `value`
    only for an unknown control type (its raw value bytes, never re-encoded)."""

    offset: int
    epoch: int
    value: bytes = b""
    kind: EntryKind = EntryKind.DATA
    control: ControlMessage | None = None

    @classmethod
    def of_control(cls, offset: int, epoch: int, message: ControlMessage) -> LogEntry:
        return cls(offset, epoch, b"", CONTROL_KIND[type(message)], message)

    @property
    def is_control(self) -> bool:
        return self.kind is not EntryKind.DATA


def leader_change_message(
    leader_id: int, voters: Iterable[int], granting_voters: Iterable[int]
) -> LeaderChangeMessage:
    """KIP-595's LeaderChangeMessage (version 0, as Kafka writes it): the leader, every current
    voter and the voters that granted its election, ids in ascending order."""
    return LeaderChangeMessage(
        version=0,
        leader_id=leader_id,
        voters=[LeaderChangeMessage.Voter(voter_id=v) for v in sorted(voters)],
        granting_voters=[LeaderChangeMessage.Voter(voter_id=v) for v in sorted(granting_voters)],
    )


class LogChangeListener(Protocol):
    """The one hook on log changes (Kafka's `KRaftControlRecordStateMachine` reads the same
    events): every append, truncation and snapshot of the core's log, in order. The voter-set
    history (KIP-853) is fed from here."""

    def on_append(self, entries: Sequence[LogEntry]) -> None: ...

    def on_truncate(self, end_offset: int) -> None: ...

    def on_snapshot(self, snapshot: Snapshot, installed: bool) -> None: ...


class ValidationKind(Enum):
    VALID = 0
    DIVERGING = 1
    SNAPSHOT = 2


@value
class ValidOffsetAndEpoch:
    """Kafka's `ValidOffsetAndEpoch`: whether a follower's (offset, epoch) matches our log."""

    kind: ValidationKind
    offset_and_epoch: OffsetAndEpoch


@value
class Snapshot:
    """A snapshot (KIP-630): everything below `snapshot_id.offset`, as opaque bytes.

    `snapshot_id` is Kafka's (end offset, epoch of the last contained record).
    """

    snapshot_id: OffsetAndEpoch
    payload: bytes


class RaftLog:
    """Entries, LEO, flushed offset and the epoch index of one replica's log."""

    __slots__ = (
        "_epoch_starts",
        "_items",
        "end_offset",
        "flushed_offset",
        "listeners",
        "snapshot",
        "start_offset",
    )

    def __init__(
        self,
        entries: Iterable[LogEntry] = (),
        *,
        flushed_offset: int | None = None,
        snapshot: Snapshot | None = None,
    ):
        self.snapshot = snapshot
        self.listeners: list[LogChangeListener] = []
        self.start_offset = 0 if snapshot is None else snapshot.snapshot_id.offset
        self.end_offset = self.start_offset
        # One item per offset from `start_offset`: a data entry's value, or a control LogEntry.
        self._items: list[bytes | LogEntry] = []
        self._epoch_starts: list[tuple[int, int]] = []
        self.flushed_offset = 0
        self.append(list(entries))
        self.flushed_offset = self.end_offset if flushed_offset is None else flushed_offset
        self.flushed_offset = max(self.flushed_offset, self.start_offset)
        if not 0 <= self.flushed_offset <= self.end_offset:
            raise ValueError("flushed offset outside the log")

    # --- reading ---------------------------------------------------------------------------
    @property
    def last_fetched_epoch(self) -> int:
        if self._epoch_starts:
            return self._epoch_starts[-1][0]
        return 0 if self.snapshot is None else self.snapshot.snapshot_id.epoch

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)

    @property
    def epoch_starts(self) -> Sequence[tuple[int, int]]:
        return tuple(self._epoch_starts)

    def _epoch_index(self, offset: int) -> int:
        """Index in `_epoch_starts` of the epoch holding `offset` (which must be in the log)."""
        starts = self._epoch_starts
        last = len(starts) - 1
        if starts[last][1] <= offset:  # the common case: the newest epoch
            return last
        return bisect_right(starts, offset, key=itemgetter(1)) - 1

    def epoch_at(self, offset: int) -> int:
        """The epoch of the entry at `offset` (which must be in the log)."""
        return self._epoch_starts[self._epoch_index(offset)][0]

    def entry(self, offset: int) -> LogEntry:
        if not self.start_offset <= offset < self.end_offset:
            raise IndexError(f"offset {offset} outside [{self.start_offset}, {self.end_offset})")
        item = self._items[offset - self.start_offset]
        if isinstance(item, LogEntry):
            return item
        return LogEntry(offset, self.epoch_at(offset), item)

    def read(self, offset: int, max_entries: int) -> list[LogEntry]:
        """Up to `max_entries` entries from `offset` (clipped to the log)."""
        first = max(offset, self.start_offset)
        lo = first - self.start_offset
        items = self._items[lo : lo + max_entries]
        out: list[LogEntry] = []
        if not items:
            return out
        starts = self._epoch_starts
        # Walk the epochs alongside: `i` indexes the epoch of `first`, `bound` is where it ends.
        i = self._epoch_index(first)
        epoch = starts[i][0]
        bound = starts[i + 1][1] if i + 1 < len(starts) else self.end_offset
        o = first
        for item in items:
            while o >= bound:
                i += 1
                epoch = starts[i][0]
                bound = starts[i + 1][1] if i + 1 < len(starts) else self.end_offset
            out.append(item if isinstance(item, LogEntry) else LogEntry(o, epoch, item))
            o += 1
        return out

    def entries(self) -> Sequence[LogEntry]:
        """Every entry in the log, rebuilt (a copy: O(length); for checkers and tests)."""
        return self.read(self.start_offset, self.end_offset - self.start_offset)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Kafka's `endOffsetForEpoch`: the end of the largest epoch <= `epoch` in the log.

        Returns (epoch found, first offset of the next epoch or LEO); (0, start) if no such
        epoch exists.
        """
        starts = self._epoch_starts
        for i in range(len(starts) - 1, -1, -1):
            e, _ = starts[i]
            if e <= epoch:
                end = starts[i + 1][1] if i + 1 < len(starts) else self.end_offset
                return OffsetAndEpoch(e, end)
        snap = self.snapshot
        if snap is not None and snap.snapshot_id.epoch <= epoch:
            return OffsetAndEpoch(snap.snapshot_id.epoch, snap.snapshot_id.offset)
        return OffsetAndEpoch(0, self.start_offset)

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidOffsetAndEpoch:
        """Does a follower at (offset, last fetched epoch) share our log up to `offset`?

        SNAPSHOT when `offset` is inside (or at the end of, with another epoch) our snapshot:
        the follower must fetch the snapshot first (Kafka `validateOffsetAndEpoch`).
        """
        snap = self.snapshot
        if snap is not None:
            sid = snap.snapshot_id
            # Kafka 4.3 `RaftLog.validateOffsetAndEpoch`: also when the fetcher's last epoch is
            # older than the snapshot's (its log cannot be matched against ours any more).
            if (
                offset < sid.offset
                or (offset == sid.offset and epoch != sid.epoch)
                or epoch < sid.epoch
            ):
                return ValidOffsetAndEpoch(ValidationKind.SNAPSHOT, sid)
        if offset == self.start_offset and offset == 0:
            return ValidOffsetAndEpoch(ValidationKind.VALID, OffsetAndEpoch(epoch, offset))
        end = self.end_offset_for_epoch(epoch)
        if end.epoch != epoch or end.offset < offset:
            return ValidOffsetAndEpoch(ValidationKind.DIVERGING, end)
        return ValidOffsetAndEpoch(ValidationKind.VALID, OffsetAndEpoch(epoch, offset))

    def truncation_offset_for(self, diverging: OffsetAndEpoch) -> int:
        """Kafka's `truncateToEndOffset`: where a follower cuts its log on DivergingEpoch."""
        if diverging.epoch == 0:
            return min(diverging.offset, self.end_offset)
        local = self.end_offset_for_epoch(diverging.epoch)
        if local.epoch == diverging.epoch:
            return min(local.offset, diverging.offset)
        return local.offset

    # --- writing ---------------------------------------------------------------------------
    def append(self, entries: Sequence[LogEntry]) -> None:
        for entry in entries:
            if entry.offset != self.end_offset:
                raise ValueError(f"append at {entry.offset}, log end is {self.end_offset}")
            last = self.last_fetched_epoch
            if entry.epoch < last:
                raise ValueError(f"epoch {entry.epoch} after epoch {last}")
            if not self._epoch_starts or entry.epoch > last:
                self._epoch_starts.append((entry.epoch, entry.offset))
            self._items.append(entry.value if entry.kind is EntryKind.DATA else entry)
            self.end_offset += 1
        for listener in self.listeners:
            listener.on_append(entries)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry at or after `offset` (no-op when `offset >= LEO`)."""
        if offset >= self.end_offset:
            return
        if offset < self.start_offset:
            raise ValueError(f"truncate to {offset} below log start {self.start_offset}")
        del self._items[offset - self.start_offset :]
        self.end_offset = offset
        while self._epoch_starts and self._epoch_starts[-1][1] >= offset:
            self._epoch_starts.pop()
        self.flushed_offset = min(self.flushed_offset, offset)
        for listener in self.listeners:
            listener.on_truncate(offset)

    def create_snapshot(self, end_offset: int, payload: bytes) -> Snapshot:
        """Snapshot everything below `end_offset` and delete that prefix of the log."""
        if not self.start_offset < end_offset <= self.end_offset:
            raise ValueError(f"snapshot end {end_offset} outside ({self.start_offset}, LEO]")
        snap = Snapshot(OffsetAndEpoch(self.entry(end_offset - 1).epoch, end_offset), payload)
        self.snapshot = snap
        self.delete_before(end_offset)
        for listener in self.listeners:
            listener.on_snapshot(snap, False)
        return snap

    def delete_before(self, offset: int) -> None:
        """Drop entries below `offset` (log start moves); the epoch index keeps the epoch that
        spans `offset`, starting at `offset` (Kafka's `truncateFromStart`)."""
        if offset <= self.start_offset:
            return
        del self._items[: offset - self.start_offset]
        self.start_offset = offset
        kept = [(e, o) for e, o in self._epoch_starts if o >= offset]
        older = [(e, o) for e, o in self._epoch_starts if o < offset]
        if older and (not kept or kept[0][1] > offset) and offset < self.end_offset:
            kept.insert(0, (older[-1][0], offset))
        self._epoch_starts = kept
        self.flushed_offset = max(self.flushed_offset, offset)

    def install_snapshot(self, snapshot: Snapshot) -> None:
        """A follower loads a fetched snapshot: the log restarts empty at its end offset."""
        self.snapshot = snapshot
        self._items.clear()
        self._epoch_starts.clear()
        self.start_offset = self.end_offset = self.flushed_offset = snapshot.snapshot_id.offset
        for listener in self.listeners:
            listener.on_snapshot(snapshot, True)

    def mark_flushed(self, offset: int) -> None:
        """Record that everything below `offset` is durable (capped at LEO, never lowered)."""
        self.flushed_offset = max(self.flushed_offset, min(offset, self.end_offset))

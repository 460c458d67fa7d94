"""In-memory disk of one simulated replica: log entries, flushed offset, quorum-state.

Role: mirror the core's log effects (`AppendEntries`, `TruncateLog`, `FlushLog`) and
`PersistElectionState`, and on a crash keep only what a real disk would: the flushed prefix,
possibly some of the unflushed suffix (page cache written back by chance), with the last of
those writes torn (recovery's CRC check drops it). Election state writes are synchronous
(write, fsync, rename: Kafka's FileQuorumStateStore), so they always survive.
Invariants: `flushed <= len(entries)`; a crash never loses a flushed entry; a wipe loses
everything (disk replacement).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from metaquorum.core.log import LogEntry, Snapshot
from metaquorum.core.rng import randbelow
from metaquorum.core.states import ElectionState


@dataclass(slots=True)
class MemoryDisk:
    """`entries[i]` holds offset `start + i`; `flushed` is an absolute offset."""

    entries: list[LogEntry] = field(default_factory=list)
    start: int = 0
    flushed: int = 0
    snapshot: Snapshot | None = None
    election: ElectionState | None = None
    writes_lost: int = 0

    @property
    def end(self) -> int:
        return self.start + len(self.entries)

    def epoch_at(self, offset: int) -> int | None:
        """The epoch of the entry at `offset`, from the log or the snapshot's last entry."""
        if self.start <= offset < self.end:
            return self.entries[offset - self.start].epoch
        snap = self.snapshot
        if snap is not None and offset == snap.snapshot_id.offset - 1:
            return snap.snapshot_id.epoch
        return None

    def append(self, entries: tuple[LogEntry, ...]) -> None:
        if entries and entries[0].offset != self.end:
            raise AssertionError(f"disk append at {entries[0].offset}, end {self.end}")
        self.entries.extend(entries)

    def truncate(self, offset: int) -> None:
        del self.entries[max(0, offset - self.start) :]
        self.flushed = min(self.flushed, offset)

    def flush(self, offset: int) -> int:
        """fsync: everything currently below `offset` becomes durable; the new flushed offset."""
        self.flushed = max(self.flushed, min(offset, self.end))
        return self.flushed

    def write_snapshot(self, snapshot: Snapshot) -> None:
        """Snapshot file written and fsynced; the log below its end is deleted."""
        end = snapshot.snapshot_id.offset
        self.snapshot = snapshot
        del self.entries[: max(0, end - self.start)]
        self.start = max(self.start, end)
        self.flushed = max(self.flushed, self.start)

    def install_snapshot(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.entries.clear()
        self.start = self.flushed = snapshot.snapshot_id.offset

    def crash(self, rng: random.Random, torn_probability: float) -> None:
        unflushed = self.end - self.flushed
        keep = randbelow(rng, unflushed + 1) if unflushed else 0
        if keep and rng.random() < torn_probability:
            keep -= 1  # the last surviving write is torn; recovery truncates it
        self.writes_lost += unflushed - keep
        del self.entries[self.flushed + keep - self.start :]
        self.flushed = self.end  # what survived a crash is on disk now

    def wipe(self) -> None:
        self.entries.clear()
        self.start = self.flushed = 0
        self.snapshot = None
        self.election = None

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

from metaquorum.core.log import LogEntry
from metaquorum.core.states import ElectionState


@dataclass(slots=True)
class MemoryDisk:
    entries: list[LogEntry] = field(default_factory=list)
    flushed: int = 0
    election: ElectionState | None = None
    writes_lost: int = 0

    def append(self, entries: tuple[LogEntry, ...]) -> None:
        if entries and entries[0].offset != len(self.entries):
            raise AssertionError(f"disk append at {entries[0].offset}, end {len(self.entries)}")
        self.entries.extend(entries)

    def truncate(self, offset: int) -> None:
        del self.entries[offset:]
        self.flushed = min(self.flushed, offset)

    def flush(self, offset: int) -> int:
        """fsync: everything currently below `offset` becomes durable; the new flushed offset."""
        self.flushed = max(self.flushed, min(offset, len(self.entries)))
        return self.flushed

    def crash(self, rng: random.Random, torn_probability: float) -> None:
        unflushed = len(self.entries) - self.flushed
        keep = rng.randrange(unflushed + 1) if unflushed else 0
        if keep and rng.random() < torn_probability:
            keep -= 1  # the last surviving write is torn; recovery truncates it
        self.writes_lost += unflushed - keep
        del self.entries[self.flushed + keep :]
        self.flushed = len(self.entries)  # what survived a crash is on disk now

    def wipe(self) -> None:
        self.entries.clear()
        self.flushed = 0
        self.election = None

"""Leader epoch cache and its `leader-epoch-checkpoint` file (reference §4.4; KIP-595 fetch).

Role: remember, for each leader epoch present in the log, the offset of its first batch, and
answer "end offset of epoch E" for a follower's DivergingEpoch check, as Kafka's
LeaderEpochFileCache does.

File form (CheckpointFile, version 0): line 1 `0`, line 2 the entry count, then one
`<epoch> <startOffset>` line per entry, each line ending with `\\n`.

Invariants: entries are strictly increasing in both epoch and start offset (an assignment that
breaks this drops the entries it conflicts with, as Kafka does); the file is replaced
atomically; a malformed file is refused with an error naming the file and line.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from metaquorum.protocol.errors import ProtocolError
from metaquorum.storage.fsutil import atomic_write

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochCheckpointError(ProtocolError):
    """A leader-epoch-checkpoint file that cannot be parsed."""


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


def parse_checkpoint(text: str, source: str = LEADER_EPOCH_CHECKPOINT) -> list[EpochEntry]:
    if text == "":
        # Kafka creates the file empty before its first write (CheckpointFile) and reads an
        # empty file as no entries (CheckpointReadBuffer.read: first line null -> empty list).
        return []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise EpochCheckpointError(f"{source}: missing version or count line")
    if lines[0].strip() != "0":
        raise EpochCheckpointError(f"{source}: line 1: unknown version {lines[0]!r}")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise EpochCheckpointError(f"{source}: line 2: bad entry count {lines[1]!r}") from None
    if count != len(lines) - 2:
        raise EpochCheckpointError(f"{source}: expected {count} entries, found {len(lines) - 2}")
    entries: list[EpochEntry] = []
    for n, line in enumerate(lines[2:], start=3):
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            entry = EpochEntry(int(parts[0]), int(parts[1]))
        except ValueError:
            raise EpochCheckpointError(f"{source}: line {n}: bad entry {line!r}") from None
        if entries and (
            entry.epoch <= entries[-1].epoch or entry.start_offset < entries[-1].start_offset
        ):
            raise EpochCheckpointError(f"{source}: line {n}: entries not increasing")
        entries.append(entry)
    return entries


def format_checkpoint(entries: list[EpochEntry]) -> str:
    return "".join([f"0\n{len(entries)}\n", *(f"{e.epoch} {e.start_offset}\n" for e in entries)])


class LeaderEpochCache:
    """Epoch -> start offset, kept in memory and mirrored to the checkpoint file."""

    def __init__(
        self, path: Path | None, entries: list[EpochEntry] | None = None, *, fsync: bool = True
    ):
        self._path = path
        self._fsync = fsync
        self._entries: list[EpochEntry] = list(entries or [])

    @classmethod
    def load(cls, partition_dir: Path, *, fsync: bool = True) -> LeaderEpochCache:
        path = partition_dir / LEADER_EPOCH_CHECKPOINT
        try:
            text = path.read_text(encoding="ascii")
        except FileNotFoundError:
            return cls(path, fsync=fsync)
        except UnicodeDecodeError as e:
            raise EpochCheckpointError(f"{path}: not ASCII at byte {e.start}") from None
        return cls(path, parse_checkpoint(text, str(path)), fsync=fsync)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def epoch_for_offset(self, offset: int) -> int:
        """Epoch of the batch holding `offset` (UNDEFINED_EPOCH if before every entry)."""
        i = bisect.bisect_right([e.start_offset for e in self._entries], offset)
        return self._entries[i - 1].epoch if i else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"bad epoch entry {epoch} {start_offset}")
        last = self._entries[-1] if self._entries else None
        if last is not None and last.epoch == epoch and last.start_offset <= start_offset:
            return
        kept = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        self._entries = [*kept, EpochEntry(epoch, start_offset)]
        self._persist()

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated there)."""
        kept = [e for e in self._entries if e.start_offset < end_offset]
        if len(kept) != len(self._entries):
            self._entries = kept
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: keep the entry covering it, moved up to it."""
        below = [e for e in self._entries if e.start_offset <= start_offset]
        if not below:
            return
        covering = below[-1]
        above = [e for e in self._entries if e.start_offset > start_offset]
        new = [EpochEntry(covering.epoch, start_offset), *above]
        if new != self._entries:
            self._entries = new
            self._persist()

    def clear(self) -> None:
        self.replace([])

    def replace(self, entries: list[EpochEntry]) -> None:
        self._entries = list(entries)
        self._persist()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as Kafka's LeaderEpochFileCache.endOffsetFor.

        The end offset of epoch E is the start offset of the first epoch above E (or the log
        end offset if E is the latest); the epoch returned is the largest epoch <= E.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        epochs = [e.epoch for e in self._entries]
        hi = bisect.bisect_right(epochs, requested_epoch)
        if hi == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher = self._entries[hi]
        if hi == 0:
            return requested_epoch, higher.start_offset
        return self._entries[hi - 1].epoch, higher.start_offset

    def _persist(self) -> None:
        if self._path is not None:
            data = format_checkpoint(self._entries).encode("ascii")
            atomic_write(self._path, data, fsync=self._fsync)

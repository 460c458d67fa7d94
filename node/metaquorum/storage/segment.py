"""One log segment: `%020d.log` of RecordBatch v2 plus its sparse `%020d.index` (reference §4.1,
§4.6).

Role: append whole batches, find the byte position of an offset, read byte ranges for fetch,
truncate, and recover (validate every batch by length and CRC, cut a torn or corrupt tail,
rebuild an index that disagrees with the log).

Index: 8-byte entries {relative offset int32, position int32}, one per `index_interval_bytes`
of log appended, keyed like Kafka's OffsetIndex by the *last* offset of the batch that starts
at `position`. The index carries no checksum: it is only a hint, checked at open and rebuilt
from the log when stale, missing or inconsistent.

Invariants: the .log file holds only whole, CRC-valid batches with increasing offsets once
`recover()` has run; bytes handed out by `read` never extend past the validated size.
"""

from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.records import (
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    batch_size_at,
    valid_prefix,
)
from metaquorum.storage.fsutil import fsync_dir
from metaquorum.storage.io_errors import io_op

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
_ENTRY = struct.Struct(">ii")
_LENGTH = struct.Struct(">i")
_HEADER = struct.Struct(">qiiB")  # base offset, length, epoch, magic


class LogCorruptionError(ProtocolError):
    """Damage recovery must not repair silently (it would drop records after it)."""


def _next_valid_batch(data: bytes, start: int) -> int | None:
    """Position of the first whole CRC-valid v2 batch beginning after `start`, if any."""
    mv = memoryview(data)
    for pos in range(start + 1, len(data) - RECORD_BATCH_OVERHEAD + 1):
        if data[pos + MAGIC_OFFSET] != 2:
            continue
        try:
            size = batch_size_at(mv, pos)
        except ProtocolError:
            continue
        if size is None or pos + size > len(data):
            continue
        try:
            if RecordBatch(mv[pos : pos + size], pos).is_valid():
                return pos
        except ProtocolError:
            continue
    return None


def segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """Header facts of one stored batch (what recovery and the epoch cache need)."""

    position: int
    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    size: int


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    valid_bytes: int
    truncated_bytes: int
    reason: str  # why the scan stopped before the end ("" if the whole file was valid)
    batches: list[BatchInfo]
    index_rebuilt: bool


class LogSegment:
    """An open segment. Not thread-safe; the log serialises access."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        fsync: bool = True,
    ):
        self.fsync = fsync  # False only in tests and benchmarks of the logic
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = directory / segment_name(base_offset, LOG_SUFFIX)
        self.index_path = directory / segment_name(base_offset, INDEX_SUFFIX)
        created = not self.log_path.exists()
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self._index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT, 0o644)
        if created and fsync:
            fsync_dir(directory)
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset  # last offset + 1, known after recover()/append
        self._index_offsets: list[int] = []  # absolute last offsets
        self._index_positions: list[int] = []
        self._bytes_since_index = 0
        self.dirty = False
        self.closed = False

    # --- open-time recovery ----------------------------------------------------------------
    def recover(self, *, is_last: bool = True, truncate_corruption: bool = False) -> RecoveryResult:
        """Validate the log (length, CRC, offsets), cut a torn tail, check/rebuild the index.

        Damage is cut only when it is a torn tail: in the last segment, with no whole valid
        batch after it. Anything else (a bad batch followed by valid ones, damage in an older
        segment) raises `LogCorruptionError` naming the file and byte, unless
        `truncate_corruption` (Kafka's behaviour: truncate at the first bad batch).
        """
        valid, infos, reason = self._scan()
        if valid < self.size and not truncate_corruption:
            rest = os.pread(self._fd, self.size - valid, valid)  # only read when damaged
            found = _next_valid_batch(rest, 0)
            follow = None if found is None else valid + found
            if follow is not None or not is_last:
                why = (
                    f"a valid batch follows at byte {follow}"
                    if follow is not None
                    else "later segments hold data"
                )
                raise LogCorruptionError(
                    f"{self.log_path}: corrupt data at byte {valid} of {self.size} ({reason}) "
                    f"and {why}: not a torn write, refusing to truncate; move the segment "
                    "away or rebuild this replica from another voter"
                )
        truncated = self.size - valid
        if truncated:
            os.ftruncate(self._fd, valid)
            self._sync(self._fd)
            self.size = valid
        self.next_offset = infos[-1].last_offset + 1 if infos else self.base_offset
        expected = self._index_for(infos)
        stored = self._read_index_file()
        rebuilt = stored != expected
        self._index_offsets = [o for o, _ in expected]
        self._index_positions = [p for _, p in expected]
        self._bytes_since_index = self.size - (expected[-1][1] if expected else 0)
        if rebuilt:
            self._write_index_file(expected)
        return RecoveryResult(valid, truncated, reason, infos, rebuilt)

    def _scan(self, chunk_bytes: int = 8 << 20) -> tuple[int, list[BatchInfo], str]:
        """Validate the file chunk by chunk (memory bounded by the chunk or the largest
        batch): (valid bytes, their batches, why the scan stopped or "")."""
        pos = 0
        infos: list[BatchInfo] = []
        next_offset, epoch = self.base_offset, -1
        want = chunk_bytes
        while pos < self.size:
            data = os.pread(self._fd, min(want, self.size - pos), pos)
            valid, batches, reason = valid_prefix(data, first_offset=next_offset, min_epoch=epoch)
            for b in batches:
                infos.append(
                    BatchInfo(
                        pos + b.position,
                        b.base_offset,
                        b.last_offset,
                        b.partition_leader_epoch,
                        b.size_in_bytes,
                    )
                )
            if batches:
                next_offset = batches[-1].next_offset
                epoch = batches[-1].partition_leader_epoch
            pos += valid
            if not reason:
                want = chunk_bytes
                continue
            # A batch that merely straddles the chunk end: read again from it.
            chunk_end = pos - valid + len(data)
            if reason.startswith("truncated batch") and chunk_end < self.size:
                try:
                    size = batch_size_at(data, valid)
                except ProtocolError:
                    size = None
                want = max(chunk_bytes, size or 0)
                continue
            return pos, infos, reason.replace(f"at byte {valid}", f"at byte {pos}")
        return pos, infos, ""

    def _index_for(self, infos: list[BatchInfo]) -> list[tuple[int, int]]:
        """The index entries appending `infos` one by one produces (as Kafka's LogSegment)."""
        entries: list[tuple[int, int]] = []
        since = 0
        for info in infos:
            if since > self.index_interval_bytes:
                entries.append((info.last_offset, info.position))
                since = 0
            since += info.size
        return entries

    def _read_index_file(self) -> list[tuple[int, int]] | None:
        size = os.fstat(self._index_fd).st_size
        if size % _ENTRY.size:
            return None
        raw = os.pread(self._index_fd, size, 0)
        return [(self.base_offset + rel, pos) for rel, pos in _ENTRY.iter_unpack(raw)]

    def _write_index_file(self, entries: list[tuple[int, int]]) -> None:
        data = b"".join(_ENTRY.pack(o - self.base_offset, p) for o, p in entries)
        os.ftruncate(self._index_fd, 0)
        os.pwrite(self._index_fd, data, 0)
        self._sync(self._index_fd)

    def index_entries(self) -> list[tuple[int, int]]:
        """The offset index: (absolute last offset of a batch, its byte position)."""
        return list(zip(self._index_offsets, self._index_positions, strict=True))

    def _sync(self, fd: int) -> None:
        if self.fsync:
            with io_op("fsync", self.log_path if fd == self._fd else self.index_path):
                os.fsync(fd)

    # --- writes ----------------------------------------------------------------------------
    def append(self, data: bytes | memoryview, infos: list[BatchInfo]) -> None:
        """Append whole, validated batches (`infos` positions relative to `data`)."""
        start = self.size
        view = memoryview(data)
        with io_op("write", self.log_path):
            while view:
                n = os.pwrite(self._fd, view, self.size)
                view = view[n:]
                self.size += n
        entries = bytearray()
        for info in infos:
            if self._bytes_since_index > self.index_interval_bytes:
                pos = start + info.position
                self._index_offsets.append(info.last_offset)
                self._index_positions.append(pos)
                entries += _ENTRY.pack(info.last_offset - self.base_offset, pos)
                self._bytes_since_index = 0
            self._bytes_since_index += info.size
        if entries:
            index_size = len(self._index_offsets) * _ENTRY.size - len(entries)
            with io_op("write", self.index_path):
                os.pwrite(self._index_fd, bytes(entries), index_size)
        if infos:
            self.next_offset = infos[-1].last_offset + 1
        self.dirty = True

    def flush(self) -> None:
        if self.dirty:
            self._sync(self._fd)
            self.dirty = False

    def truncate_to(self, offset: int) -> int:
        """Drop the batch holding `offset` and every later one. Returns the bytes removed."""
        pos = self.position_of(offset)
        if pos is None:
            return 0
        removed = self.size - pos
        with io_op("truncate", self.log_path):
            os.ftruncate(self._fd, pos)
        self._sync(self._fd)
        self.size = pos
        keep = bisect.bisect_left(self._index_positions, pos)
        del self._index_offsets[keep:]
        del self._index_positions[keep:]
        with io_op("truncate", self.index_path):
            os.ftruncate(self._index_fd, keep * _ENTRY.size)
        self._bytes_since_index = self.size - (self._index_positions[-1] if keep else 0)
        last = self._last_batch_before(pos)
        self.next_offset = last.last_offset + 1 if last else self.base_offset
        self.dirty = False
        return removed

    # --- reads -----------------------------------------------------------------------------
    def _header_at(self, pos: int) -> BatchInfo:
        raw = os.pread(self._fd, RECORD_BATCH_OVERHEAD, pos)
        base, length, epoch, _magic = _HEADER.unpack_from(raw, 0)
        (delta,) = struct.unpack_from(">i", raw, LAST_OFFSET_DELTA_OFFSET)
        return BatchInfo(pos, base, base + delta, epoch, length + LOG_OVERHEAD)

    def position_of(self, offset: int) -> int | None:
        """Byte position of the batch holding `offset`, or None if beyond the segment."""
        if offset >= self.next_offset:
            return None
        i = bisect.bisect_right(self._index_offsets, offset - 1)
        pos = self._index_positions[i - 1] if i else 0
        while pos < self.size:
            info = self._header_at(pos)
            if info.last_offset >= offset:
                return pos
            pos += info.size
        return None

    def _last_batch_before(self, end: int) -> BatchInfo | None:
        i = bisect.bisect_left(self._index_positions, end)
        pos = self._index_positions[i - 1] if i else 0
        last: BatchInfo | None = None
        while pos < end:
            last = self._header_at(pos)
            pos += last.size
        return last

    def read(self, start_pos: int, max_bytes: int, *, min_one_batch: bool = True) -> bytes:
        """Whole batches from `start_pos`, up to `max_bytes` (at least one if min_one_batch).

        One pread of the range, batch boundaries walked in memory (the bytes were validated
        at append or recovery), the partial last batch trimmed."""
        if start_pos >= self.size:
            return b""
        chunk = os.pread(self._fd, min(max(max_bytes, 0), self.size - start_pos), start_pos)
        end = 0
        while end + LOG_OVERHEAD <= len(chunk):
            size = _LENGTH.unpack_from(chunk, end + LENGTH_OFFSET)[0] + LOG_OVERHEAD
            if end + size > len(chunk):
                break
            end += size
        if end == 0:
            if not min_one_batch:
                return b""
            return os.pread(self._fd, self._header_at(start_pos).size, start_pos)
        return chunk if end == len(chunk) else chunk[:end]

    def read_batch(self, pos: int) -> RecordBatch:
        info = self._header_at(pos)
        return RecordBatch(memoryview(os.pread(self._fd, info.size, pos)), pos)

    def iter_infos(self) -> list[BatchInfo]:
        out: list[BatchInfo] = []
        pos = 0
        while pos < self.size:
            info = self._header_at(pos)
            out.append(info)
            pos += info.size
        return out

    # --- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._fd)
            os.close(self._index_fd)

    def delete(self) -> None:
        self.close()
        for p in (self.log_path, self.index_path):
            p.unlink(missing_ok=True)

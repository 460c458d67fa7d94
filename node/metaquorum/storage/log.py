"""The replicated metadata log on disk: `__cluster_metadata-0/` (reference §4; KIP-595, KIP-630).

Role: what the Raft core's effects need of a durable log, in Kafka's on-disk format:
`append_as_leader` (assign offsets and the leader epoch to validated batches),
`append_as_follower` (validate and append as is), `flush` (-> flushed offset), `truncate_to`,
`read` (log bytes for Fetch, never re-encoded), `end_offset_for_epoch` (DivergingEpoch),
`log_start_offset` and snapshot ids (`latest_snapshot_id`, `delete_before_snapshot`,
`truncate_to_latest_snapshot`).

Invariants:
- offsets are dense from the log start offset to the log end offset; epochs never decrease;
- only bytes that passed the length + CRC check at append or at open are ever returned;
- recovery at open validates every segment batch by batch and cuts a torn tail; any other
  damage (valid batches after a bad one, damage in an older segment, missing or overlapping
  segments) raises LogCorruptionError unless `LogConfig.truncate_corruption`; it rebuilds
  indexes that disagree with their log, removes partial snapshots, and truncates fully when
  the latest snapshot is past the log end;
- files are created, renamed and deleted with a directory fsync; `flush` fsyncs every dirty
  segment and returns the offset up to which the log is durable.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from metaquorum.protocol.records import (
    PARTITION_LEADER_EPOCH_OFFSET,
    SimpleRecord,
    build_batch,
    iter_batches,
)
from metaquorum.storage.epoch_cache import EpochEntry, LeaderEpochCache
from metaquorum.storage.fsutil import fsync_dir
from metaquorum.storage.log_types import (
    METADATA_PARTITION_DIR,
    METADATA_TOPIC,
    LogAppendInfo,
    LogConfig,
    LogError,
    LogFetchInfo,
    OffsetOutOfRangeError,
    RecoveryReport,
)
from metaquorum.storage.segment import LOG_SUFFIX, BatchInfo, LogCorruptionError, LogSegment
from metaquorum.storage.snapshots import (
    OffsetAndEpoch,
    clean_snapshot_dir,
    delete_snapshot,
    list_snapshots,
)

__all__ = [
    "METADATA_PARTITION_DIR",
    "METADATA_TOPIC",
    "LogAppendInfo",
    "LogConfig",
    "LogError",
    "LogFetchInfo",
    "MetadataLog",
    "OffsetOutOfRangeError",
    "RecoveryReport",
]

_BASE_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")


class MetadataLog:
    """A segmented log of RecordBatch v2 files plus its epoch cache and snapshots."""

    def __init__(self, directory: Path, config: LogConfig) -> None:
        self.directory = directory
        self.config = config
        self.segments: list[LogSegment] = []
        self.epoch_cache = LeaderEpochCache.load(directory, fsync=config.fsync)
        self.log_start_offset = 0
        self.flushed_offset = 0
        self.snapshots: list[OffsetAndEpoch] = []
        self.recovery = RecoveryReport()

    # --- open and recovery -----------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path, config: LogConfig | None = None) -> MetadataLog:
        directory.mkdir(parents=True, exist_ok=True)
        log = cls(directory, config or LogConfig())
        log._recover()
        return log

    def _recover(self) -> None:
        report = self.recovery
        report.removed_files += clean_snapshot_dir(self.directory)
        for stray in self.directory.glob("*.tmp"):
            stray.unlink()
            report.removed_files.append(stray)
        bases = sorted(
            int(p.name[: -len(LOG_SUFFIX)])
            for p in self.directory.glob(f"*{LOG_SUFFIX}")
            if p.name[: -len(LOG_SUFFIX)].isdigit()
        )
        infos: list[BatchInfo] = []
        for i, base in enumerate(bases):
            seg = LogSegment(
                self.directory,
                base,
                index_interval_bytes=self.config.index_interval_bytes,
                fsync=self.config.fsync,
            )
            expected = infos[-1].last_offset + 1 if infos else None
            if expected is not None and base != expected:
                seg.close()
                self._refuse_or_drop(
                    bases[i:],
                    f"{seg.log_path}: base offset {base} but the previous segment ends at "
                    f"{expected} ({'overlap' if base < expected else 'missing segment'})",
                )
                break
            try:
                result = seg.recover(
                    is_last=i == len(bases) - 1,
                    truncate_corruption=self.config.truncate_corruption,
                )
            except BaseException:
                seg.close()
                self.close()
                raise
            self.segments.append(seg)
            infos += result.batches
            if result.index_rebuilt:
                report.rebuilt_indexes.append(seg.index_path)
            if result.truncated_bytes:
                report.truncated_bytes += result.truncated_bytes
                report.reasons.append(
                    f"{seg.log_path}: cut {result.truncated_bytes} bytes at byte "
                    f"{result.valid_bytes}: {result.reason}"
                )
                if i + 1 < len(bases):  # only reachable with truncate_corruption
                    self._refuse_or_drop(bases[i + 1 :], f"{seg.log_path} was cut")
                break
        if not self.segments:
            self.segments.append(self._new_segment(0))
        self.snapshots = list_snapshots(self.directory)
        self.log_start_offset = self.segments[0].base_offset
        if self.snapshots and self.snapshots[0].offset > self.log_start_offset:
            self.log_start_offset = min(self.snapshots[0].offset, self.log_end_offset)
        self._rebuild_epoch_cache(infos, self.log_start_offset)
        latest = self.latest_snapshot_id()
        if latest is not None and latest.offset > self.log_end_offset:
            self._truncate_fully(latest.offset)
        self.flushed_offset = self.log_end_offset
        if report.removed_files or report.truncated_bytes:
            self._fsync_dir()

    def _fsync_dir(self) -> None:
        if self.config.fsync:
            fsync_dir(self.directory)

    def _refuse_or_drop(self, bases: list[int], why: str) -> None:
        """Later segments that cannot follow: refuse to open, or (truncate_corruption) drop."""
        if not self.config.truncate_corruption:
            self.close()
            raise LogCorruptionError(
                f"{why}: refusing to open; move the segments from offset {bases[0]} away "
                "or rebuild this replica from another voter"
            )
        for base in bases:
            doomed = LogSegment(self.directory, base)
            self.recovery.removed_files.append(doomed.log_path)
            self.recovery.reasons.append(f"{doomed.log_path}: removed ({why})")
            doomed.delete()

    def _rebuild_epoch_cache(self, infos: list[BatchInfo], log_start: int) -> None:
        """The log scan is the truth: one entry per epoch at its first batch, the entry that
        covers the log start moved up to it. The checkpoint is rewritten only if it differs."""
        expected: list[EpochEntry] = []
        for info in infos:
            if not expected or info.partition_leader_epoch > expected[-1].epoch:
                expected.append(EpochEntry(info.partition_leader_epoch, info.base_offset))
        if expected and expected[0].start_offset < log_start:
            covering = [e for e in expected if e.start_offset <= log_start][-1]
            expected = [
                EpochEntry(covering.epoch, log_start),
                *(e for e in expected if e.start_offset > log_start),
            ]
        if self.epoch_cache.entries != expected:
            self.epoch_cache.replace(expected)

    def _new_segment(self, base_offset: int) -> LogSegment:
        seg = LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            fsync=self.config.fsync,
        )
        seg.recover()
        return seg

    # --- facts -----------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    def last_fetched_epoch(self) -> int:
        """Epoch of the last batch; else the latest snapshot's; else 0 (KafkaMetadataLog)."""
        epoch = self.epoch_cache.latest_epoch()
        if epoch >= 0:
            return epoch
        latest = self.latest_snapshot_id()
        return latest.epoch if latest is not None else 0

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.log_end_offset, self.last_fetched_epoch())

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """(end offset, epoch) for DivergingEpoch, as KafkaMetadataLog.endOffsetForEpoch."""
        found_epoch, found_offset = self.epoch_cache.end_offset_for(epoch, self.log_end_offset)
        earliest = self.snapshots[0] if self.snapshots else None
        if found_epoch < 0:
            return self.end_offset_and_epoch()
        if earliest is not None and found_offset == earliest.offset and found_epoch < epoch:
            return earliest
        return OffsetAndEpoch(found_offset, found_epoch)

    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self.snapshots[-1] if self.snapshots else None

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self.snapshots[0] if self.snapshots else None

    # --- appends ---------------------------------------------------------------------------
    @staticmethod
    def _batch_infos(
        data: bytes | bytearray | memoryview, *, allow_partial_tail: bool
    ) -> list[BatchInfo]:
        """Every whole batch of `data`, CRC-checked (ProtocolError on the first bad one)."""
        infos: list[BatchInfo] = []
        for batch in iter_batches(data, allow_partial_tail=allow_partial_tail):
            batch.ensure_valid()
            infos.append(
                BatchInfo(
                    batch.position,
                    batch.base_offset,
                    batch.last_offset,
                    batch.partition_leader_epoch,
                    batch.size_in_bytes,
                )
            )
        return infos

    def _validated(self, data: bytes | bytearray | memoryview) -> list[BatchInfo]:
        infos = self._batch_infos(data, allow_partial_tail=False)
        if not infos:
            raise LogError("append of no record batches")
        return infos

    def append_as_leader(self, data: bytes | bytearray, epoch: int) -> LogAppendInfo:
        """Validate batches, then assign offsets from the log end and stamp `epoch` (both
        outside the CRC, as Kafka's LogValidator.assignOffsets does) and append."""
        buf = bytearray(data)
        infos = self._validated(buf)
        next_offset = self.log_end_offset
        stamped: list[BatchInfo] = []
        for info in infos:
            _BASE_OFFSET.pack_into(buf, info.position, next_offset)
            _EPOCH.pack_into(buf, info.position + PARTITION_LEADER_EPOCH_OFFSET, epoch)
            span = info.last_offset - info.base_offset
            stamped.append(
                BatchInfo(info.position, next_offset, next_offset + span, epoch, info.size)
            )
            next_offset += span + 1
        return self._append(buf, stamped)

    def append_records_as_leader(
        self,
        records: Sequence[bytes | SimpleRecord],
        epoch: int,
        timestamp_ms: int,
        *,
        control: bool = False,
    ) -> LogAppendInfo:
        """Build one batch at the log end (offsets and epoch already right) and append it;
        the batch was just encoded here, so it is not re-validated."""
        start = self.log_end_offset
        batch = build_batch(start, epoch, records, timestamp_ms=timestamp_ms, control=control)
        info = BatchInfo(0, start, start + len(records) - 1, epoch, len(batch))
        return self._append(batch, [info])

    def append_as_follower(self, data: bytes | memoryview) -> LogAppendInfo:
        """Append batches from the leader as they are: whole (a partial tail from a size-capped
        fetch is dropped), CRC-valid, starting at the log end, epochs not decreasing."""
        view = memoryview(data)
        infos = self._batch_infos(view, allow_partial_tail=True)
        if not infos:
            raise LogError("append of no whole record batches")
        end = infos[-1].position + infos[-1].size
        return self._append(view[:end], infos)

    def _append(
        self, data: bytes | bytearray | memoryview, infos: list[BatchInfo]
    ) -> LogAppendInfo:
        expected = self.log_end_offset
        last_epoch = self.epoch_cache.latest_epoch()
        for info in infos:
            if info.base_offset != expected or info.last_offset < info.base_offset:
                raise LogError(
                    f"batch at byte {info.position} starts at offset {info.base_offset}, "
                    f"expected {expected}"
                )
            if info.partition_leader_epoch < last_epoch:
                raise LogError(
                    f"batch at offset {info.base_offset} has epoch {info.partition_leader_epoch}"
                    f" below the log's last epoch {last_epoch}"
                )
            last_epoch = info.partition_leader_epoch
            expected = info.last_offset + 1
        size = infos[-1].position + infos[-1].size
        seg = self.segments[-1]
        if seg.size and seg.size + size > self.config.segment_bytes:
            seg = self._roll()
        seg.append(memoryview(data)[:size], infos)
        for info in infos:
            if info.partition_leader_epoch > self.epoch_cache.latest_epoch():
                self.epoch_cache.assign(info.partition_leader_epoch, info.base_offset)
        return LogAppendInfo(infos[0].base_offset, infos[-1].last_offset, size)

    def _roll(self) -> LogSegment:
        self.segments[-1].flush()
        seg = self._new_segment(self.log_end_offset)
        self.segments.append(seg)
        return seg

    def flush(self) -> int:
        """fsync every segment with unflushed writes; returns the durable end offset."""
        if self.config.fsync:
            for seg in self.segments:
                seg.flush()
        self.flushed_offset = self.log_end_offset
        return self.flushed_offset

    # --- truncation ------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Remove every record at or after `offset`; returns the new log end offset.

        Batches are whole on disk: when `offset` falls inside a batch, that batch goes too and
        the new end offset is its base offset (Raft truncates at batch boundaries anyway)."""
        if offset >= self.log_end_offset:
            return self.log_end_offset
        if offset < self.log_start_offset:
            raise LogError(f"cannot truncate to {offset}, below log start {self.log_start_offset}")
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
            self._fsync_dir()
        seg = self.segments[-1]
        seg.truncate_to(offset)
        end = self.log_end_offset  # < offset if `offset` fell inside a batch
        self.epoch_cache.truncate_from_end(end)
        self.flushed_offset = min(self.flushed_offset, end)
        return end

    def _truncate_fully(self, new_start: int) -> None:
        for seg in self.segments:
            seg.delete()
        self._fsync_dir()
        self.segments = [self._new_segment(new_start)]
        self.epoch_cache.clear()
        self.log_start_offset = new_start
        self.flushed_offset = new_start

    # --- reads -----------------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int) -> LogFetchInfo:
        """Whole batches from the one holding `start_offset`, at least one, up to max_bytes,
        from a single segment (as Kafka: the next read continues in the next segment)."""
        if start_offset < self.log_start_offset or start_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} outside [{self.log_start_offset}, {self.log_end_offset}]"
            )
        for seg in self.segments:
            if seg.next_offset > start_offset:
                pos = seg.position_of(start_offset)
                if pos is not None:
                    return LogFetchInfo(seg.read(pos, max_bytes), start_offset)
        return LogFetchInfo(b"", start_offset)

    # --- snapshots and the log start offset ------------------------------------------------
    def snapshot_frozen(self, snapshot_id: OffsetAndEpoch) -> None:
        """Record a snapshot frozen into this directory (by a SnapshotWriter)."""
        if snapshot_id not in self.snapshots:
            self.snapshots = sorted([*self.snapshots, snapshot_id])

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Move the log start up to `snapshot_id`, delete older snapshots and segments wholly
        below it (KafkaMetadataLog.deleteBeforeSnapshot)."""
        if snapshot_id not in self.snapshots or snapshot_id.offset > self.flushed_offset:
            return False
        if snapshot_id.offset <= self.log_start_offset:
            return False
        self.log_start_offset = snapshot_id.offset
        while len(self.segments) > 1 and self.segments[1].base_offset <= snapshot_id.offset:
            self.segments.pop(0).delete()
        self.epoch_cache.truncate_from_start(snapshot_id.offset)
        for old in [s for s in self.snapshots if s < snapshot_id]:
            delete_snapshot(self.directory, old)
        self.snapshots = [s for s in self.snapshots if s >= snapshot_id]
        self._fsync_dir()
        return True

    def truncate_to_latest_snapshot(self) -> bool:
        """Follower after downloading a snapshot: if it is ahead of the log (a later epoch,
        or the same epoch past the end), drop the whole log and start at the snapshot, as
        KafkaMetadataLog.truncateToLatestSnapshot. Older snapshots are deleted."""
        latest = self.latest_snapshot_id()
        latest_epoch = max(self.epoch_cache.latest_epoch(), 0)
        if latest is None or not (
            latest.epoch > latest_epoch
            or (latest.epoch == latest_epoch and latest.offset > self.log_end_offset)
        ):
            return False
        self._truncate_fully(latest.offset)
        for old in [s for s in self.snapshots if s < latest]:
            delete_snapshot(self.directory, old)
        self.snapshots = [latest]
        return True

    def close(self, *, flush: bool = True) -> None:
        """Close every segment, fsyncing it first unless `flush` is False (after a storage
        failure: a second fsync could return 0 and prove nothing)."""
        for seg in self.segments:
            if flush:
                seg.flush()
            seg.close()

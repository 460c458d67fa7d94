"""Snapshot files of the metadata log (reference §3.4, §4.7; KIP-630).

Role: name, list, write, read and delete `%020d-%010d.checkpoint` files in the partition
directory. A snapshot is a plain sequence of RecordBatch v2 batches: a control batch starting
with SnapshotHeader, data batches, a control batch with SnapshotFooter (the framing is built by
`metaquorum.protocol.control_records`; this module moves bytes).

Invariants:
- a snapshot is written to `<offset>-<epoch>-<random>.checkpoint.part` (as Kafka's
  `Files.createTempFile`), fsync'd, made read-only, renamed to its final name, and the
  directory fsync'd: a crash leaves either no snapshot or a whole one;
- `.checkpoint.part` and `.checkpoint.deleted` leftovers are removed at open
  (`clean_snapshot_dir`);
- the snapshot id is (end offset, epoch): end offset = last contained offset + 1.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.records import RecordBatch, iter_batches
from metaquorum.storage.fsutil import fsync_dir
from metaquorum.storage.io_errors import io_op

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".checkpoint.part"
DELETE_SUFFIX = ".checkpoint.deleted"
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


class OffsetAndEpoch(NamedTuple):
    """A snapshot id: end offset (exclusive) and the epoch of the last contained record."""

    offset: int
    epoch: int


BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


class SnapshotError(ProtocolError):
    """A snapshot file that is malformed (bad batch, missing header or footer)."""


def snapshot_file_name(snapshot_id: OffsetAndEpoch) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SUFFIX}"


def parse_snapshot_name(name: str) -> OffsetAndEpoch | None:
    m = _NAME.match(name)
    return OffsetAndEpoch(int(m.group(1)), int(m.group(2))) if m else None


def list_snapshots(partition_dir: Path) -> list[OffsetAndEpoch]:
    """Ids of the whole snapshots in the directory, oldest first."""
    ids = [parse_snapshot_name(p.name) for p in partition_dir.iterdir() if p.is_file()]
    return sorted(i for i in ids if i is not None)


def clean_snapshot_dir(partition_dir: Path) -> list[Path]:
    """Remove partial (`.checkpoint.part`) and pending-delete files; return what was removed."""
    removed = [
        p
        for p in partition_dir.iterdir()
        if p.name.endswith(PARTIAL_SUFFIX) or p.name.endswith(DELETE_SUFFIX)
    ]
    for p in removed:
        p.unlink(missing_ok=True)
    if removed:
        fsync_dir(partition_dir)
    return removed


def delete_snapshot(partition_dir: Path, snapshot_id: OffsetAndEpoch) -> bool:
    """Rename to `.checkpoint.deleted` (durably), then unlink. False if it did not exist."""
    path = partition_dir / snapshot_file_name(snapshot_id)
    doomed = path.with_name(path.name + ".deleted")
    try:
        os.replace(path, doomed)
    except FileNotFoundError:
        return False
    fsync_dir(partition_dir)
    doomed.unlink(missing_ok=True)
    fsync_dir(partition_dir)
    return True


class RawSnapshotWriter:
    """Bytes of a new snapshot, appended in order then frozen into place (FileRawSnapshotWriter)."""

    def __init__(self, partition_dir: Path, snapshot_id: OffsetAndEpoch, *, fsync: bool = True):
        self.partition_dir = partition_dir
        self.snapshot_id = snapshot_id
        self._fsync = fsync
        prefix = f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}-"
        fd, name = tempfile.mkstemp(suffix=PARTIAL_SUFFIX, prefix=prefix, dir=partition_dir)
        self._fd: int | None = fd
        self.temp_path = Path(name)
        self.size = 0

    def append(self, data: bytes | memoryview) -> None:
        if self._fd is None:
            raise ValueError(f"snapshot {self.snapshot_id} is already frozen or aborted")
        view = memoryview(data)
        with io_op("write", self.temp_path):
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
                self.size += n

    def freeze(self) -> Path:
        """fsync, make read-only, rename to the final name, fsync the directory."""
        if self._fd is None:
            raise ValueError(f"snapshot {self.snapshot_id} is already frozen or aborted")
        if self._fsync:
            with io_op("fsync", self.temp_path):
                os.fsync(self._fd)
        os.close(self._fd)
        self._fd = None
        os.chmod(self.temp_path, 0o400)
        final = self.partition_dir / snapshot_file_name(self.snapshot_id)
        with io_op("rename", final):
            os.replace(self.temp_path, final)
        if self._fsync:
            fsync_dir(self.partition_dir)
        return final

    def abort(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self.temp_path.unlink(missing_ok=True)

    def __enter__(self) -> RawSnapshotWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()


class RawSnapshotReader:
    """Byte-range access to a frozen snapshot (serving FetchSnapshot) and batch iteration."""

    def __init__(self, path: Path):
        self.path = path
        parsed = parse_snapshot_name(path.name)
        self.snapshot_id = parsed if parsed is not None else BOOTSTRAP_SNAPSHOT_ID
        self._fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self._fd).st_size

    @classmethod
    def open(cls, partition_dir: Path, snapshot_id: OffsetAndEpoch) -> RawSnapshotReader:
        return cls(partition_dir / snapshot_file_name(snapshot_id))

    def read(self, position: int, max_bytes: int) -> bytes:
        """Unaligned bytes [position, position + max_bytes) (FetchSnapshot UnalignedRecords)."""
        if position < 0 or position > self.size:
            raise ValueError(f"position {position} outside snapshot of {self.size} bytes")
        return os.pread(self._fd, min(max_bytes, self.size - position), position)

    def batches(self) -> Iterator[RecordBatch]:
        """Every batch, CRC-checked; a torn tail or a bad batch raises SnapshotError."""
        data = self.read(0, self.size)
        pos = 0
        try:
            for batch in iter_batches(data, allow_partial_tail=False):
                batch.ensure_valid()
                pos = batch.position + batch.size_in_bytes
                yield batch
        except ProtocolError as e:
            raise SnapshotError(f"{self.path}: at byte {pos}: {e}") from None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RawSnapshotReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

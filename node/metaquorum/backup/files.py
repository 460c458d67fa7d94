"""Kafka-format files of a backup, written and checked: log segments rolled by size, the SHA-256
of each file, and the voter set / kraft.version a snapshot and a run of batches end with.

Role: `SegmentStager` appends fetched batches (as the leader stored them) to
`<base offset, 20 digits>.log` files, rolling at a size; `check_segments` and
`check_snapshot` are what `verify` and `restore` run on downloaded files; `Membership` follows
the KRaftVersion and Voters control records (KIP-853) to the backup's end.

Invariants: segments hold whole, CRC-valid RecordBatch v2 batches with dense offsets, named by
their first offset (as Kafka names them, so `kafka-dump-log` reads them); a check names the file
and the byte or offset where it failed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from metaquorum.backup.manifest import BackupError, FileEntry, VoterEntry
from metaquorum.protocol.control_records import control_records_of
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import KRaftVersionRecord, VotersRecord
from metaquorum.protocol.records import RecordBatch, iter_batches
from metaquorum.storage.snapshot_records import read_snapshot
from metaquorum.storage.snapshots import SnapshotError, parse_snapshot_name

SEGMENT_BYTES = 64 * 1024 * 1024


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


@dataclass
class Membership:
    """The latest KRaftVersion and Voters records seen, in log order."""

    kraft_version: int = 0
    voters: VotersRecord | None = None

    def see(self, kraft: KRaftVersionRecord | None, voters: VotersRecord | None) -> None:
        if kraft is not None:
            self.kraft_version = kraft.kraft_version
        if voters is not None:
            self.voters = voters

    def see_batch(self, batch: RecordBatch) -> None:
        if not batch.is_control:
            return
        for _, message in control_records_of(batch):
            if isinstance(message, KRaftVersionRecord):
                self.see(message, None)
            elif isinstance(message, VotersRecord):
                self.see(None, message)

    def voter_entries(self) -> list[VoterEntry]:
        if self.voters is None:
            return []
        return [
            VoterEntry(
                v.voter_id,
                str(v.voter_directory_id),
                [f"{e.name}://{e.host}:{e.port}" for e in v.endpoints],
            )
            for v in self.voters.voters
        ]


@dataclass
class SegmentStager:
    """Batches appended in offset order into size-rolled segment files under `directory`."""

    directory: Path
    segment_bytes: int = SEGMENT_BYTES
    files: list[FileEntry] = field(default_factory=list)
    _path: Path | None = None
    _base: int = 0
    _next: int = 0
    _size: int = 0

    def append(self, batch_bytes: bytes, base_offset: int, next_offset: int) -> None:
        if self._path is not None and self._size + len(batch_bytes) > self.segment_bytes:
            self._close()
        if self._path is None:
            self._path, self._base, self._size = (
                self.directory / segment_name(base_offset),
                base_offset,
                0,
            )
        with self._path.open("ab") as f:
            f.write(batch_bytes)
        self._size += len(batch_bytes)
        self._next = next_offset

    def _close(self) -> None:
        if self._path is not None:
            self.files.append(
                FileEntry(
                    self._path.name,
                    "segment",
                    self._size,
                    sha256_of(self._path),
                    self._base,
                    self._next,
                )
            )
            self._path = None

    def finish(self) -> list[FileEntry]:
        self._close()
        return self.files


def check_file(path: Path, entry: FileEntry, where: str) -> None:
    size = path.stat().st_size
    if size != entry.size:
        raise BackupError(
            f"{where}: {size} bytes, the manifest says {entry.size}: the backup is damaged"
        )
    if sha256_of(path) != entry.sha256:
        raise BackupError(f"{where}: sha256 differs from the manifest: the backup is damaged")


def check_snapshot(path: Path, entry: FileEntry, membership: Membership) -> tuple[int, int]:
    """Decode the snapshot (header, CRCs, footer); (end offset, epoch) from its name."""
    sid = parse_snapshot_name(path.name)
    if sid is None or sid.offset != entry.base_offset:
        raise BackupError(f"{path.name}: not a snapshot of end offset {entry.base_offset}")
    try:
        contents = read_snapshot(path)
    except (SnapshotError, ProtocolError) as e:
        raise BackupError(f"snapshot {path.name} does not decode: {e}") from None
    membership.see(contents.kraft_version, contents.voters)
    return sid.offset, sid.epoch


def check_segments(
    paths: list[tuple[Path, FileEntry]], start: int, start_epoch: int, membership: Membership
) -> tuple[int, int, int]:
    """Every batch CRC-valid, offsets dense from `start`, epochs not decreasing;
    (end offset, last epoch, data records)."""
    offset, epoch, records = start, start_epoch, 0
    for path, entry in paths:
        if entry.base_offset != offset:
            raise BackupError(
                f"{path.name}: starts at {entry.base_offset}, expected {offset}: "
                "offsets not contiguous"
            )
        data = path.read_bytes()
        pos = 0
        try:
            for batch in iter_batches(data, allow_partial_tail=False):
                batch.ensure_valid()
                if batch.base_offset != offset:
                    raise BackupError(
                        f"{path.name}: batch at byte {batch.position} has offset "
                        f"{batch.base_offset}, expected {offset}"
                    )
                if batch.partition_leader_epoch < epoch:
                    raise BackupError(f"{path.name}: epoch goes back at offset {offset}")
                epoch = batch.partition_leader_epoch
                offset = batch.next_offset
                pos = batch.position + batch.size_in_bytes
                membership.see_batch(batch)
                if not batch.is_control:
                    records += batch.next_offset - batch.base_offset
        except ProtocolError as e:
            raise BackupError(f"{path.name}: bad batch at byte {pos}: {e}") from None
        if offset != entry.end_offset:
            raise BackupError(
                f"{path.name}: ends at {offset}, the manifest says {entry.end_offset}"
            )
    return offset, epoch, records

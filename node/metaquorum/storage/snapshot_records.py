"""Snapshots as records: header/footer framing on top of the raw snapshot files (reference §3.4;
KIP-630, KIP-853).

Role: `SnapshotWriter` writes what Kafka's RecordsSnapshotWriter writes: a control batch at
offset 0 and the snapshot epoch with SnapshotHeader (+ KRaftVersion and Voters when
kraft.version >= 1), data batches at the following offsets, and a control batch with
SnapshotFooter; then freezes the file into place. `read_snapshot` checks that framing and
returns the decoded contents.

Invariants: a frozen snapshot always starts with a SnapshotHeader record and ends with a
SnapshotFooter record, every batch CRC-valid with dense offsets from 0; a file that breaks
this is refused with an error naming the file and byte position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from metaquorum.protocol.control_records import (
    decode_control_record,
    snapshot_footer_batch,
    snapshot_header_batch,
)
from metaquorum.protocol.control_types import ControlRecordType
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import KRaftVersionRecord, SnapshotHeaderRecord, VotersRecord
from metaquorum.protocol.records import Record, SimpleRecord, build_batch
from metaquorum.storage.snapshots import (
    OffsetAndEpoch,
    RawSnapshotReader,
    RawSnapshotWriter,
    SnapshotError,
)


class SnapshotWriter:
    """Write one snapshot: header batch now, data batches by `append`, footer on `freeze`."""

    def __init__(
        self,
        partition_dir: Path,
        snapshot_id: OffsetAndEpoch,
        *,
        last_contained_log_timestamp: int,
        timestamp_ms: int,
        kraft_version: int = 0,
        voters: VotersRecord | None = None,
        fsync: bool = True,
    ) -> None:
        self.snapshot_id = snapshot_id
        self.timestamp_ms = timestamp_ms
        self.raw = RawSnapshotWriter(partition_dir, snapshot_id, fsync=fsync)
        header = snapshot_header_batch(
            snapshot_id.epoch,
            last_contained_log_timestamp,
            timestamp_ms=timestamp_ms,
            kraft_version=kraft_version,
            voters=voters,
        )
        self.raw.append(header)
        self.next_offset = 1 + (kraft_version >= 1) + (kraft_version >= 1 and voters is not None)

    def append(self, records: Sequence[bytes | SimpleRecord]) -> None:
        batch = build_batch(
            self.next_offset, self.snapshot_id.epoch, records, timestamp_ms=self.timestamp_ms
        )
        self.raw.append(batch)
        self.next_offset += len(records)

    def freeze(self) -> Path:
        footer = snapshot_footer_batch(
            self.next_offset, self.snapshot_id.epoch, timestamp_ms=self.timestamp_ms
        )
        self.raw.append(footer)
        self.next_offset += 1
        return self.raw.freeze()

    def abort(self) -> None:
        self.raw.abort()


@dataclass(slots=True)
class SnapshotContents:
    path: Path
    snapshot_id: OffsetAndEpoch
    header: SnapshotHeaderRecord
    kraft_version: KRaftVersionRecord | None = None
    voters: VotersRecord | None = None
    records: list[Record] = field(default_factory=list)  # data records only
    batches: int = 0


def read_snapshot(path: Path) -> SnapshotContents:
    """Read and check a whole snapshot file (CRC, dense offsets, header first, footer last)."""
    try:
        return _read_snapshot(path)
    except SnapshotError:
        raise
    except ProtocolError as e:
        raise SnapshotError(f"{path}: {e}") from None


def _read_snapshot(path: Path) -> SnapshotContents:
    with RawSnapshotReader(path) as reader:
        header: SnapshotHeaderRecord | None = None
        out: SnapshotContents | None = None
        footer_seen = False
        next_offset = 0
        for batch in reader.batches():
            where = f"{path}: batch at byte {batch.position}"
            if footer_seen:
                raise SnapshotError(f"{where}: data after the SnapshotFooter")
            if batch.base_offset != next_offset:
                raise SnapshotError(f"{where}: offset {batch.base_offset}, expected {next_offset}")
            next_offset = batch.next_offset
            for record in batch:
                if not batch.is_control:
                    if out is None:
                        raise SnapshotError(f"{where}: data before the SnapshotHeader")
                    out.records.append(record)
                    continue
                kind, message = decode_control_record(record)
                if out is None:
                    if not isinstance(message, SnapshotHeaderRecord):
                        raise SnapshotError(f"{where}: first record is {kind.name}, not a header")
                    header = message
                    out = SnapshotContents(path, reader.snapshot_id, header)
                elif kind == ControlRecordType.KRAFT_VERSION:
                    assert isinstance(message, KRaftVersionRecord)
                    out.kraft_version = message
                elif kind == ControlRecordType.KRAFT_VOTERS:
                    assert isinstance(message, VotersRecord)
                    out.voters = message
                elif kind == ControlRecordType.SNAPSHOT_FOOTER:
                    footer_seen = True
            if out is not None:
                out.batches += 1
        if out is None:
            raise SnapshotError(f"{path}: no SnapshotHeader (empty snapshot)")
        if not footer_seen:
            raise SnapshotError(f"{path}: no SnapshotFooter at byte {reader.size}")
        return out

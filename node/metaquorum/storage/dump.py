"""`metaquorum dump-log`: print segments and snapshot files as Kafka's DumpLogSegments does
(reference §6.6).

Role: for each `.log` segment or `.checkpoint` snapshot, one line per batch (base/last offset,
count, epoch, flags, position, timestamp, size, CRC and its validity), and with deep iteration
one line per record, control records decoded (LeaderChange, SnapshotHeader, SnapshotFooter,
KRaftVersion, KRaftVoters) and, with `print_data`, keys and values.

Invariants: never stops silently: a batch that fails its CRC is printed with `isvalid: false`,
trailing bytes that do not form a batch are reported with their count and position, and
undecodable records are reported with the offset where decoding failed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from metaquorum.protocol import json_form
from metaquorum.protocol.control_records import DUMP_NAMES, decode_control_record
from metaquorum.protocol.control_types import ControlRecordType
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.records import (
    CompressionType,
    RecordBatch,
    batch_size_at,
)
from metaquorum.storage.snapshots import parse_snapshot_name


class DumpError(ValueError):
    """A file dump-log cannot read at all (missing, wrong kind of name)."""


def _batch_line(b: RecordBatch) -> str:
    last_seq = -1 if b.base_sequence < 0 else b.base_sequence + b.last_offset_delta
    codec = b.compression_type
    codec_name = CompressionType(codec).name.lower() if codec in range(5) else str(codec)
    return (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.records_count} "
        f"baseSequence: {b.base_sequence} lastSequence: {last_seq} "
        f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
        f"partitionLeaderEpoch: {b.partition_leader_epoch} "
        f"isTransactional: {str(b.is_transactional).lower()} "
        f"isControl: {str(b.is_control).lower()} deleteHorizonMs: OptionalLong.empty "
        f"position: {b.position} CreateTime: {b.max_timestamp} size: {b.size_in_bytes} "
        f"magic: {b.magic} compresscodec: {codec_name} crc: {b.crc} "
        f"isvalid: {str(b.is_valid()).lower()}"
    )


def _records_lines(b: RecordBatch, print_data: bool) -> list[str]:
    out: list[str] = []
    try:
        for r in b:
            key_size = -1 if r.key is None else len(r.key)
            value_size = -1 if r.value is None else len(r.value)
            line = (
                f"| offset: {r.offset} CreateTime: {r.timestamp} keySize: {key_size} "
                f"valueSize: {value_size} sequence: -1 "
                f"headerKeys: [{','.join(h.key for h in r.headers)}]"
            )
            if b.is_control:
                kind, message = decode_control_record(r)
                name = DUMP_NAMES.get(kind, kind.name)
                body = "" if message is None else json_form.dumps(json_form.to_json(message, 0))
                # Kafka prints "LeaderChange: {json}" but "SnapshotHeader {json}" etc.
                sep = ":" if kind == ControlRecordType.LEADER_CHANGE else ""
                line += f" {name}{sep} {body}"
            elif print_data:
                key = "" if r.key is None else r.key.decode("utf-8", "backslashreplace")
                value = "" if r.value is None else r.value.decode("utf-8", "backslashreplace")
                line += (
                    f" key: {key} payload: {value}" if r.key is not None else f" payload: {value}"
                )
            out.append(line)
    except ProtocolError as e:
        out.append(f"| cannot decode records of the batch at byte {b.position}: {e}")
    return out


def dump_file(
    path: Path,
    *,
    deep_iteration: bool = False,
    print_data: bool = False,
    emit: Callable[[str], None] = print,
) -> dict[str, int]:
    """Print `path` as Kafka's DumpLogSegments does; returns counts {batches, invalid_batches,
    invalid_bytes} plus `first_invalid_position` / `invalid_position` (byte positions) when
    there is damage."""
    name = path.name
    if name.endswith(".log"):
        stem = name[: -len(".log")].split(".")[0]
        if not stem.isdigit():
            raise DumpError(
                f"{path}: a segment's name must be its base offset, e.g. 00000000000000000000.log"
            )
        kind = "segment"
    elif name.endswith(".checkpoint"):
        if name != "bootstrap.checkpoint" and parse_snapshot_name(name) is None:
            raise DumpError(
                f"{path}: a snapshot's name must be <20-digit offset>-<10-digit epoch>.checkpoint"
            )
        kind = "snapshot"
    else:
        raise DumpError(f"{path}: dump-log reads .log segments and .checkpoint snapshots only")
    try:
        data = memoryview(path.read_bytes())
    except OSError as e:
        raise DumpError(f"{path}: {e.strerror}") from None
    emit(f"Dumping {path}")
    if kind == "segment":
        emit(f"Log starting offset: {int(stem)}")
    elif name == "bootstrap.checkpoint":
        emit("KRaft bootstrap snapshot")
    else:
        sid = parse_snapshot_name(name)
        assert sid is not None
        emit(f"Snapshot end offset: {sid.offset}, epoch: {sid.epoch}")
    deep = deep_iteration or print_data
    counts = {"batches": 0, "invalid_batches": 0, "invalid_bytes": 0}
    pos = 0
    while pos < len(data):
        try:
            size = batch_size_at(data, pos)
            if size is None or pos + size > len(data):
                break
            batch = RecordBatch(data[pos : pos + size], pos)
        except ProtocolError as e:
            emit(f"Stopped at byte {pos}: {e}")
            break
        counts["batches"] += 1
        emit(_batch_line(batch))
        if not batch.is_valid():
            counts["invalid_batches"] += 1
            counts.setdefault("first_invalid_position", pos)
        if deep:
            for line in _records_lines(batch, print_data):
                emit(line)
        pos += size
    if pos < len(data):
        counts["invalid_bytes"] = len(data) - pos
        counts["invalid_position"] = pos
        emit(f"Found {len(data) - pos} invalid bytes at the end of {path.name}")
    return counts

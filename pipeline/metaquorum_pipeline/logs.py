"""`metaquorum-pipeline logs PATH... --out DIR`: analytics over real metadata-log segments and
snapshots (ours or Kafka's; the format is the same), as a Spark job.

Role: the driver finds the `.log` segments and `.checkpoint` snapshots under each PATH and splits
each file at batch boundaries into byte ranges of about `split_bytes` (walking the 12-byte batch
prefixes only); executors read their ranges with the protocol's own `RecordBatch` reader and
emit one row per batch (offsets, epoch, records, size, timestamps, CRC validity, control record
types, the leader a LeaderChange names). The rows go to Parquet partitioned by log directory,
and Spark SQL makes the per-epoch and per-log figures of `logs_report`.
Invariants: a split starts and ends on a batch boundary, so every batch is read exactly once;
bytes that do not form a whole batch (a torn tail, damage) are reported as one `invalid` row at
their position, never skipped silently; files are only read.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from metaquorum.protocol.control_records import decode_control_record
from metaquorum.protocol.control_types import ControlRecordType
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.records import RecordBatch

SPLIT_BYTES = 8 << 20
_PREFIX = struct.Struct(">qi")  # BaseOffset int64, Length int32: a batch is Length + 12 bytes

# (name, Spark SQL type, nullable); `log` (the directory) is the partition column, last.
COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("file", "string", False),
    ("kind", "string", False),  # segment | snapshot
    ("position", "bigint", False),
    ("base_offset", "bigint", True),
    ("last_offset", "bigint", True),
    ("records", "int", True),
    ("epoch", "int", True),
    ("is_control", "boolean", True),
    ("size", "int", False),
    ("base_timestamp", "bigint", True),
    ("max_timestamp", "bigint", True),
    ("valid", "boolean", False),
    ("control_types", "array<string>", False),
    ("leader_id", "int", True),
    ("error", "string", True),
    ("log", "string", False),
)
Split = tuple[str, str, str, int, int]  # (log, kind, path, start, stop)


def _kind(path: Path) -> str | None:
    stem = path.name.split(".")[0]
    if path.suffix == ".log" and stem.isdigit():
        return "segment"
    if path.suffix == ".checkpoint" and (stem.replace("-", "").isdigit() or stem == "bootstrap"):
        return "snapshot"
    return None


def find_files(paths: Iterable[Path]) -> list[tuple[str, str, Path]]:
    """(log label, kind, file) for every segment and snapshot under the paths, sorted; the label
    is the file's directory relative to the PATH given, prefixed with that PATH's name."""
    out = []
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            kind = _kind(f)
            if kind is None:
                continue
            rel = f.parent.relative_to(root) if root.is_dir() else Path()
            label = str(Path(root.resolve().name) / rel) if str(rel) != "." else root.resolve().name
            out.append((label, kind, f))
    return sorted(out, key=lambda t: (t[0], str(t[2])))


def splits(label: str, kind: str, path: Path, split_bytes: int = SPLIT_BYTES) -> list[Split]:
    """Byte ranges of whole batches, each about `split_bytes` (a batch is never cut)."""
    size = path.stat().st_size
    out: list[Split] = []
    start = pos = 0
    with path.open("rb") as f:
        while pos + _PREFIX.size <= size:
            f.seek(pos)
            _, length = _PREFIX.unpack(f.read(_PREFIX.size))
            if length <= 0 or pos + _PREFIX.size + length > size:
                break  # the rest is not a whole batch: the last split reports it
            pos += _PREFIX.size + length
            if pos - start >= split_bytes:
                out.append((label, kind, str(path), start, pos))
                start = pos
    if start < size or not out:
        out.append((label, kind, str(path), start, size))
    return out


def _row(label: str, kind: str, name: str, b: RecordBatch) -> tuple[Any, ...]:
    types: list[str] = []
    leader: int | None = None
    error = None
    if b.is_control:
        try:
            for record in b:
                rtype, message = decode_control_record(record)
                types.append(rtype.name)
                if rtype == ControlRecordType.LEADER_CHANGE and message is not None:
                    leader = int(getattr(message, "leader_id", -1))
        except ProtocolError as e:
            error = str(e)
    return (name, kind, b.position, b.base_offset, b.last_offset, b.records_count,
            b.partition_leader_epoch, b.is_control, b.size_in_bytes, b.base_timestamp,
            b.max_timestamp, b.is_valid(), types, leader, error, label)  # fmt: skip


def read_split(split: Split) -> Iterator[tuple[Any, ...]]:
    """One row per batch in the split; what does not form a batch is one `valid=false` row."""
    label, kind, path, start, stop = split
    name = os.path.basename(path)
    with open(path, "rb") as f:
        f.seek(start)
        data = memoryview(f.read(stop - start))
    pos = 0
    while pos < len(data):
        error = None
        if len(data) - pos >= _PREFIX.size:
            length = _PREFIX.unpack_from(data, pos)[1]
            end = pos + _PREFIX.size + length
            if length > 0 and end <= len(data):
                try:
                    yield _row(label, kind, name, RecordBatch(data[pos:end], start + pos))
                    pos = end
                    continue
                except ProtocolError as e:
                    error = str(e)
        yield (name, kind, start + pos, None, None, None, None, None, len(data) - pos, None,
               None, False, [], None, error or "not a whole batch", label)  # fmt: skip
        return


def read_splits(parts: Iterable[Split]) -> Iterator[tuple[Any, ...]]:
    for split in parts:
        yield from read_split(split)


def schema() -> Any:
    from pyspark.sql import types as st

    def kind(name: str) -> Any:
        if name == "array<string>":
            return st.ArrayType(st.StringType(), containsNull=False)
        simple = {"string": st.StringType(), "bigint": st.LongType(), "int": st.IntegerType(),
                  "boolean": st.BooleanType()}  # fmt: skip
        return simple[name]

    return st.StructType([st.StructField(n, kind(t), null) for n, t, null in COLUMNS])


def run(spark: Any, paths: list[Path], out: Path, split_bytes: int = SPLIT_BYTES) -> dict[str, Any]:
    """Scan the files into `out/batches` (Parquet, replaced on each run); returns counts."""
    files = find_files(paths)
    parts = [s for label, kind, f in files for s in splits(label, kind, f, split_bytes)]
    if not parts:
        raise ValueError(f"no .log segment or .checkpoint snapshot under {[str(p) for p in paths]}")
    rows = spark.sparkContext.parallelize(parts, len(parts)).mapPartitions(read_splits)
    df = spark.createDataFrame(rows, schema(), verifySchema=False)
    df.write.mode("overwrite").partitionBy("log").parquet(str(out / "batches"))
    return {"files": len(files), "splits": len(parts), "bytes": sum(s[4] - s[3] for s in parts)}

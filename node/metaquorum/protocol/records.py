"""RecordBatch v2 (magic 2) and Record codec, as Kafka's DefaultRecordBatch / DefaultRecord.

Role: build record batches byte-for-byte as Kafka's raft BatchBuilder and MemoryRecordsBuilder
do, and read batches out of any buffer (a fetch response, a segment file, a snapshot) without
copying it: `iter_batches` yields `RecordBatch` views over `memoryview` slices and a batch's
records are decoded lazily, one at a time, when iterated.

Layout (reference §3.1, §3.2; KIP-98 message format v2):
    batch:  BaseOffset int64 | Length int32 | PartitionLeaderEpoch int32 | Magic int8 (=2)
            | CRC uint32 | Attributes int16 | LastOffsetDelta int32 | BaseTimestamp int64
            | MaxTimestamp int64 | ProducerId int64 | ProducerEpoch int16 | BaseSequence int32
            | RecordsCount int32 | Records...
    record: Length varint | Attributes int8 | TimestampDelta varlong | OffsetDelta varint
            | KeyLength varint | Key | ValueLength varint | Value | HeadersCount varint
            | Headers (KeyLength varint, Key utf-8, ValueLength varint, Value)...

Invariants:
- the CRC is CRC-32C over [Attributes, end of batch); PartitionLeaderEpoch is outside it, so
  a leader may stamp its epoch on a batch without recomputing the CRC;
- Length = batch size - 12; a batch is never shorter than RECORD_BATCH_OVERHEAD (61 bytes);
- lengths and deltas inside a record are signed ZigZag varints, -1 meaning null;
- every decoding failure (truncated, bad magic, bad length, CRC mismatch, bad varint, records
  that do not fill the batch exactly, compressed data we cannot read) raises `ProtocolError`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum

import crc32c

from metaquorum.protocol.errors import ProtocolError

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET
LOG_OVERHEAD = 12  # BaseOffset + Length
MAGIC_VALUE_V2 = 2

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

# BaseOffset, Length, PartitionLeaderEpoch, Magic
_PREFIX = struct.Struct(">qiib")
# Attributes .. RecordsCount (the CRC'd header part)
_TAIL_HEADER = struct.Struct(">hiqqqhii")
_UINT32 = struct.Struct(">I")
_INT32 = struct.Struct(">i")


class CompressionType(IntEnum):
    """Attribute bits 0-2 (Kafka's CompressionType ids)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# --- signed ZigZag varints (records only; RPC bodies use unsigned varints) -------------------


def size_of_varint(value: int) -> int:
    """Bytes a signed varint (int32) of `value` occupies."""
    return _size_of_unsigned((value << 1) ^ (value >> 31))


def size_of_varlong(value: int) -> int:
    return _size_of_unsigned((value << 1) ^ (value >> 63))


def _size_of_unsigned(v: int) -> int:
    size = 1
    while v > 0x7F:
        v >>= 7
        size += 1
    return size


def _write_unsigned(out: bytearray, v: int) -> None:
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def write_varint(out: bytearray, value: int) -> None:
    """Append `value` (a signed int32) as a ZigZag varint."""
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"varint out of int32 range: {value}")
    _write_unsigned(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    """Append `value` (a signed int64) as a ZigZag varlong."""
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"varlong out of int64 range: {value}")
    _write_unsigned(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _read_unsigned(buf: memoryview | bytes, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    # As Kafka's ByteUtils.readVarint/readVarlong: at most 5 (10) bytes; bits beyond 32 (64)
    # in the last byte are dropped, as Java's int (long) shift drops them.
    result = 0
    shift = 0
    start = pos
    for _ in range(max_bytes):
        if pos >= end:
            raise ProtocolError(f"truncated varint at byte {start}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise ProtocolError(f"varint longer than {max_bytes} bytes at byte {start}")


def read_varint(buf: memoryview | bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """Read a ZigZag int32 at `pos`; returns (value, position after it)."""
    raw, pos = _read_unsigned(buf, pos, len(buf) if end is None else end, 5)
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: memoryview | bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """Read a ZigZag int64 at `pos`; returns (value, position after it)."""
    raw, pos = _read_unsigned(buf, pos, len(buf) if end is None else end, 10)
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


# --- records ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Header:
    key: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class SimpleRecord:
    """A record to append: what `build_batch` takes (a bare `bytes` means value, null key)."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[Header, ...] = ()
    timestamp_ms: int | None = None  # None: the batch timestamp


@dataclass(frozen=True, slots=True)
class Record:
    """A record read out of a batch, with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    attributes: int = 0


def _encode_record(
    out: bytearray, offset_delta: int, timestamp_delta: int, rec: SimpleRecord
) -> None:
    body = bytearray()
    body.append(0)  # attributes: unused
    write_varlong(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_nullable(body, rec.key)
    _write_nullable(body, rec.value)
    write_varint(body, len(rec.headers))
    for h in rec.headers:
        _write_nullable(body, h.key.encode("utf-8"))
        _write_nullable(body, h.value)
    write_varint(out, len(body))
    out += body


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


_SMALL = 1 << 14
_VARINT = [_varint_bytes(v) for v in range(_SMALL)]


def _write_nullable(out: bytearray, data: bytes | None) -> None:
    if data is None:
        write_varint(out, -1)
    else:
        write_varint(out, len(data))
        out += data


def build_batch(
    base_offset: int,
    partition_leader_epoch: int,
    records: Sequence[bytes | SimpleRecord],
    *,
    timestamp_ms: int,
    control: bool = False,
    transactional: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """Encode one uncompressed v2 batch, CreateTime, as Kafka's raft BatchBuilder does.

    Offsets are base_offset + i; BaseTimestamp = the first record's timestamp (the batch
    timestamp by default) and MaxTimestamp the largest, as in MemoryRecordsBuilder.
    """
    if not records:
        raise ValueError("a record batch holds at least one record")
    stamps = [
        timestamp_ms if isinstance(r, bytes) or r.timestamp_ms is None else r.timestamp_ms
        for r in records
    ]
    base_ts = stamps[0]
    out = bytearray(RECORDS_OFFSET)
    for i, (r, ts) in enumerate(zip(records, stamps, strict=True)):
        if isinstance(r, bytes) and ts == base_ts and i < _SMALL:
            # Fast path for KRaft data records: attributes 0, timestamp delta 0, null key,
            # no headers.
            n = len(r)
            vlen = _VARINT[n] if n < _SMALL else _varint_bytes(n)
            od = _VARINT[i]
            body_len = 4 + len(od) + len(vlen) + n
            out += _VARINT[body_len] if body_len < _SMALL else _varint_bytes(body_len)
            out += b"\x00\x00"
            out += od
            out += b"\x01"
            out += vlen
            out += r
            out += b"\x00"
            continue
        rec = SimpleRecord(r) if isinstance(r, bytes) else r
        _encode_record(out, i, ts - base_ts, rec)
    attributes = (CONTROL_FLAG_MASK if control else 0) | (
        TRANSACTIONAL_FLAG_MASK if transactional else 0
    )
    _PREFIX.pack_into(
        out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_VALUE_V2
    )
    _TAIL_HEADER.pack_into(
        out,
        ATTRIBUTES_OFFSET,
        attributes,
        len(records) - 1,
        base_ts,
        max(stamps),
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    _UINT32.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


class RecordBatch:
    """A read-only view of one v2 batch over a memoryview (no copy of the buffer).

    The constructor checks only that the header is whole and the length sane; call
    `is_valid()`/`ensure_valid()` for the CRC. Iterating yields `Record`s decoded lazily.
    """

    __slots__ = (
        "_attributes",
        "_buf",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "crc",
        "last_offset_delta",
        "max_timestamp",
        "partition_leader_epoch",
        "position",
        "producer_epoch",
        "producer_id",
        "records_count",
    )

    _attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    def __init__(self, buf: memoryview, position: int = 0) -> None:
        if len(buf) < RECORD_BATCH_OVERHEAD:
            raise ProtocolError(
                f"record batch at byte {position} is {len(buf)} bytes, "
                f"less than the {RECORD_BATCH_OVERHEAD}-byte header"
            )
        self._buf = buf
        self.position = position
        base_offset, length, epoch, magic = _PREFIX.unpack_from(buf, 0)
        if magic != MAGIC_VALUE_V2:
            raise ProtocolError(f"record batch at byte {position}: magic {magic}, expected 2")
        if length + LOG_OVERHEAD != len(buf):
            raise ProtocolError(
                f"record batch at byte {position}: length field {length} does not match "
                f"{len(buf) - LOG_OVERHEAD} bytes"
            )
        self.base_offset: int = base_offset
        self.partition_leader_epoch: int = epoch
        self.crc: int = _UINT32.unpack_from(buf, CRC_OFFSET)[0]
        (
            self._attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = _TAIL_HEADER.unpack_from(buf, ATTRIBUTES_OFFSET)

    # header facts -------------------------------------------------------------------------
    @property
    def buffer(self) -> memoryview:
        """The batch's bytes (a view into the source buffer)."""
        return self._buf

    @property
    def size_in_bytes(self) -> int:
        return len(self._buf)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def attributes(self) -> int:
        return self._attributes

    @property
    def magic(self) -> int:
        return MAGIC_VALUE_V2

    @property
    def compression_type(self) -> int:
        return self._attributes & COMPRESSION_CODEC_MASK

    @property
    def is_control(self) -> bool:
        return bool(self._attributes & CONTROL_FLAG_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self._attributes & TRANSACTIONAL_FLAG_MASK)

    def compute_checksum(self) -> int:
        return crc32c.crc32c(self._buf[ATTRIBUTES_OFFSET:])

    def is_valid(self) -> bool:
        return self.compute_checksum() == self.crc

    def ensure_valid(self) -> None:
        computed = self.compute_checksum()
        if computed != self.crc:
            raise ProtocolError(
                f"record batch at byte {self.position} (base offset {self.base_offset}) is "
                f"corrupt: stored CRC 0x{self.crc:08x}, computed 0x{computed:08x}"
            )

    # records ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Record]:
        codec = self.compression_type
        if codec != CompressionType.NONE:
            known = codec in CompressionType._value2member_map_
            name = CompressionType(codec).name.lower() if known else f"codec {codec}"
            raise ProtocolError(
                f"record batch at byte {self.position} is compressed ({name}); "
                "only uncompressed batches are supported"
            )
        if self.records_count < 0:
            raise ProtocolError(f"record batch at byte {self.position}: negative record count")
        buf = self._buf
        end = len(buf)
        pos = RECORDS_OFFSET
        for _ in range(self.records_count):
            rec, pos = self._read_record(buf, pos, end)
            yield rec
        if pos != end:
            raise ProtocolError(
                f"record batch at byte {self.position}: {end - pos} bytes left after "
                f"{self.records_count} records"
            )

    def records(self) -> list[Record]:
        return list(self)

    def _read_record(self, buf: memoryview, pos: int, end: int) -> tuple[Record, int]:
        where = self.position + pos
        length, pos = _small_varint(buf, pos, end, read_varint)
        if length < 1 or pos + length > end:
            raise ProtocolError(f"record at byte {where}: bad length {length}")
        rend = pos + length
        attributes = buf[pos]
        ts_delta, pos = _small_varint(buf, pos + 1, rend, read_varlong)
        offset_delta, pos = _small_varint(buf, pos, rend, read_varint)
        key, pos = _read_nullable(buf, pos, rend, where)
        value, pos = _read_nullable(buf, pos, rend, where)
        count, pos = _small_varint(buf, pos, rend, read_varint)
        headers: tuple[Header, ...] = ()
        if count:
            headers, pos = _read_headers(buf, pos, rend, where, count)
        if pos != rend:
            raise ProtocolError(f"record at byte {where}: {rend - pos} unread bytes")
        rec = Record(
            self.base_offset + offset_delta,
            self.base_timestamp + ts_delta,
            key,
            value,
            headers,
            attributes,
        )
        return rec, rend

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"epoch={self.partition_leader_epoch}, count={self.records_count}, "
            f"control={self.is_control}, size={self.size_in_bytes})"
        )


def _small_varint(
    buf: memoryview, pos: int, end: int, slow: Callable[[memoryview, int, int], tuple[int, int]]
) -> tuple[int, int]:
    """A ZigZag varint, with the one- and two-byte cases (most lengths and deltas) inline."""
    if pos + 1 < end:
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        b2 = buf[pos + 1]
        if b2 < 0x80:
            raw = (b & 0x7F) | (b2 << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    return slow(buf, pos, end)


def _read_nullable(buf: memoryview, pos: int, end: int, where: int) -> tuple[bytes | None, int]:
    n, pos = _small_varint(buf, pos, end, read_varint)
    if n == -1:
        return None, pos
    if n < -1 or pos + n > end:
        raise ProtocolError(f"record at byte {where}: bad field length {n}")
    return bytes(buf[pos : pos + n]), pos + n


def _read_headers(
    buf: memoryview, pos: int, end: int, where: int, count: int
) -> tuple[tuple[Header, ...], int]:
    if count < 0:
        raise ProtocolError(f"record at byte {where}: negative header count {count}")
    headers: list[Header] = []
    for _ in range(count):
        hkey, pos = _read_nullable(buf, pos, end, where)
        if hkey is None:
            raise ProtocolError(f"record at byte {where}: null header key")
        hval, pos = _read_nullable(buf, pos, end, where)
        try:
            headers.append(Header(hkey.decode("utf-8"), hval))
        except UnicodeDecodeError as e:
            raise ProtocolError(f"record at byte {where}: header key not UTF-8") from e
    return tuple(headers), pos


def batch_size_at(buf: memoryview | bytes, pos: int = 0) -> int | None:
    """Size of the batch starting at `pos` from its length field, or None if the 12-byte
    prefix is not whole. Raises ProtocolError when the length is below the v2 header size."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    length: int = _INT32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
    if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
        raise ProtocolError(f"record batch at byte {pos}: length field {length} is too small")
    return length + LOG_OVERHEAD


def iter_batches(
    buf: bytes | bytearray | memoryview, *, allow_partial_tail: bool = True
) -> Iterator[RecordBatch]:
    """Yield each batch in `buf` as a view, in order, without copying.

    A trailing partial batch (as a size-capped fetch response may end with) is skipped when
    `allow_partial_tail`, otherwise it raises. The CRC is not checked here: call
    `ensure_valid()` on each batch (or use `iter_valid_batches`).
    """
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    pos = 0
    total = len(mv)
    while pos < total:
        size = batch_size_at(mv, pos)
        if size is None or pos + size > total:
            if allow_partial_tail:
                return
            raise ProtocolError(
                f"truncated record batch at byte {pos}: {total - pos} bytes of "
                f"{'?' if size is None else size}"
            )
        yield RecordBatch(mv[pos : pos + size], pos)
        pos += size


def iter_valid_batches(buf: bytes | bytearray | memoryview) -> Iterator[RecordBatch]:
    """`iter_batches` with every batch's CRC checked (ProtocolError on the first bad one)."""
    for batch in iter_batches(buf):
        batch.ensure_valid()
        yield batch


def valid_prefix(
    buf: bytes | bytearray | memoryview, *, first_offset: int | None = None, min_epoch: int = -1
) -> tuple[int, list[RecordBatch], str]:
    """Longest prefix of whole, CRC-valid batches with dense offsets and non-decreasing epochs.

    `first_offset`, when given, is the base offset the first batch must have, and `min_epoch`
    the smallest epoch it may carry (for a scan resumed chunk by chunk). Returns (bytes,
    batches, the reason the scan stopped: "" if it reached the end). Used by recovery:
    everything after the prefix is a torn or corrupt tail. (BaseOffset and
    PartitionLeaderEpoch are outside the CRC, hence the offset and epoch checks.)
    """
    mv = memoryview(buf)
    pos = 0
    batches: list[RecordBatch] = []
    next_offset = first_offset
    epoch = min_epoch
    while pos < len(mv):
        try:
            size = batch_size_at(mv, pos)
            if size is None or pos + size > len(mv):
                return pos, batches, f"truncated batch at byte {pos}"
            batch = RecordBatch(mv[pos : pos + size], pos)
        except ProtocolError as e:
            return pos, batches, str(e)
        if not batch.is_valid():
            return pos, batches, f"CRC mismatch in batch at byte {pos}"
        if batch.last_offset_delta < 0 or (
            next_offset is not None and batch.base_offset != next_offset
        ):
            return (
                pos,
                batches,
                (
                    f"batch at byte {pos} has base offset {batch.base_offset}, "
                    f"expected {next_offset}"
                ),
            )
        if batch.partition_leader_epoch < epoch:
            return (
                pos,
                batches,
                f"batch at byte {pos}: epoch {batch.partition_leader_epoch} < {epoch}",
            )
        batches.append(batch)
        next_offset = batch.next_offset
        epoch = batch.partition_leader_epoch
        pos += size
    return pos, batches, ""


def records_of(batches: Iterable[RecordBatch]) -> Iterator[Record]:
    for batch in batches:
        yield from batch

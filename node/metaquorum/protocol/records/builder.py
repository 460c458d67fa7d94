"""Building v2 record batches byte-for-byte as Kafka's raft BatchBuilder (reference §3.1-§3.2).

Role: `build_batch` and the record value types. Invariants: uncompressed, CreateTime; the CRC
is CRC-32C over [Attributes, end); offsets are base_offset + i.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import crc32c

from metaquorum.protocol.records.layout import (
    ATTRIBUTES_OFFSET,
    BATCH_PREFIX,
    BATCH_TAIL_HEADER,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    LOG_OVERHEAD,
    MAGIC_VALUE_V2,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORDS_OFFSET,
    TRANSACTIONAL_FLAG_MASK,
    UINT32,
)
from metaquorum.protocol.records.varint import write_varint, write_varlong

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
    BATCH_PREFIX.pack_into(
        out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_VALUE_V2
    )
    BATCH_TAIL_HEADER.pack_into(
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
    UINT32.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)

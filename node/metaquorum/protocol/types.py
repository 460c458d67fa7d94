"""Primitive types of the Kafka wire format: fixed-width ints, varints, strings, bytes, Uuid.

Role: the building blocks every message codec (generated or hand-written) uses.
- `ByteReader` (byte_reader.py, re-exported here) is a bounds-checked cursor over
  bytes/bytearray/memoryview. Every read checks the remaining length first, so a decoder sees
  `ProtocolError` and never IndexError, struct.error or UnicodeDecodeError.
- Writers are plain functions appending to a `bytearray` (fast, no wrapper objects), plus
  pre-bound `struct` packers for the fixed-width types.
- `Uuid` mirrors `org.apache.kafka.common.Uuid`: two signed int64 halves, text form URL-safe
  base64 without padding (22 chars), ZERO / ONE (= METADATA_TOPIC_ID) reserved. It lives in
  ids.py with the KRaft topic (`RaftTopic`); this module re-exports them.

Encodings (Kafka `protocol/types/Type.java`, `ByteUtils.java`; KIP-482 for compact forms):
int8..int64 big-endian two's complement; uint16 big-endian; bool one byte (non-zero = true);
float64 IEEE-754 big-endian; STRING int16 length (-1 = null if nullable); COMPACT_STRING unsigned
varint N+1 (0 = null); BYTES int32 length (-1 = null); COMPACT_BYTES unsigned varint N+1;
ARRAY int32 count (-1 = null); COMPACT_ARRAY unsigned varint N+1; unsigned varint = LEB128 of
the 32-bit value, at most 5 bytes; varint/varlong = ZigZag then LEB128 (records only).
"""

from __future__ import annotations

from dataclasses import dataclass

from metaquorum.protocol import byte_reader, ids
from metaquorum.protocol.errors import ProtocolError

# The reader and the wire's fixed-width formats (byte_reader.py), here too
Buffer = byte_reader.Buffer
ByteReader = byte_reader.ByteReader
INT8 = byte_reader.INT8
INT16 = byte_reader.INT16
INT32 = byte_reader.INT32
INT64 = byte_reader.INT64
UINT16 = byte_reader.UINT16
UINT32 = byte_reader.UINT32
FLOAT64 = byte_reader.FLOAT64
MAX_INT16_STRING = byte_reader.MAX_INT16_STRING

pack_int8 = INT8.pack
pack_int16 = INT16.pack
pack_int32 = INT32.pack
pack_int64 = INT64.pack
pack_uint16 = UINT16.pack
pack_uint32 = UINT32.pack
pack_float64 = FLOAT64.pack


# Kafka's ids (ids.py), here too: the codecs and their callers import them from this module
RandomSource = ids.RandomSource
Uuid = ids.Uuid
UUID = ids.UUID
METADATA_TOPIC_NAME = ids.METADATA_TOPIC_NAME
METADATA_TOPIC_ID = ids.METADATA_TOPIC_ID
RaftTopic = ids.RaftTopic
METADATA_RAFT_TOPIC = ids.METADATA_RAFT_TOPIC
TEST_RAFT_TOPIC = ids.TEST_RAFT_TOPIC
RAFT_TOPIC_KEY = ids.RAFT_TOPIC_KEY
raft_topic_named = ids.raft_topic_named


@dataclass(frozen=True, slots=True)
class RawTaggedField:
    """A tagged field this version does not know: kept as raw bytes and written back."""

    tag: int
    data: bytes


def write_unsigned_varint(out: bytearray, value: int) -> None:
    """Append LEB128 of `value` taken as an unsigned 32-bit number (negative ints: 5 bytes)."""
    value &= 0xFFFFFFFF
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_unsigned_varlong(out: bytearray, value: int) -> None:
    value &= 0xFFFFFFFFFFFFFFFF
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    """ZigZag + LEB128 signed int32 (record fields)."""
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise ProtocolError(f"varint {value} is out of int32 range")
    write_unsigned_varint(out, (value << 1) ^ (value >> 31))


def write_varlong(out: bytearray, value: int) -> None:
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise ProtocolError(f"varlong {value} is out of int64 range")
    write_unsigned_varlong(out, (value << 1) ^ (value >> 63))


def unsigned_varint_size(value: int) -> int:
    value &= 0xFFFFFFFF
    size = 1
    while value > 0x7F:
        value >>= 7
        size += 1
    return size


def _utf8(value: str, what: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ProtocolError(f"{what} cannot be encoded as UTF-8: {exc}") from None


def write_string(out: bytearray, value: str) -> None:
    data = _utf8(value, "string")
    if len(data) > MAX_INT16_STRING:
        raise ProtocolError(f"string of {len(data)} bytes is too long (max 32767)")
    out += INT16.pack(len(data))
    out += data


def write_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
    else:
        write_string(out, value)


def write_compact_string(out: bytearray, value: str) -> None:
    data = _utf8(value, "string")
    if len(data) > MAX_INT16_STRING:
        raise ProtocolError(f"string of {len(data)} bytes is too long (max 32767)")
    if len(data) < 0x7F:  # the length is one varint byte: no call
        out.append(len(data) + 1)
    else:
        write_unsigned_varint(out, len(data) + 1)
    out += data


def write_compact_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    data = _utf8(value, "string")
    if len(data) > MAX_INT16_STRING:
        raise ProtocolError(f"string of {len(data)} bytes is too long (max 32767)")
    if len(data) < 0x7F:
        out.append(len(data) + 1)
    else:
        write_unsigned_varint(out, len(data) + 1)
    out += data


def write_bytes(out: bytearray, value: Buffer) -> None:
    out += INT32.pack(len(value))
    out += value


def write_nullable_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        write_bytes(out, value)


def write_compact_bytes(out: bytearray, value: Buffer) -> None:
    write_unsigned_varint(out, len(value) + 1)
    out += value


def write_compact_nullable_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out.append(0)
    else:
        write_unsigned_varint(out, len(value) + 1)
        out += value


def write_uuid(out: bytearray, value: Uuid) -> None:
    out += UUID.pack(value.most_significant_bits, value.least_significant_bits)


def write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)

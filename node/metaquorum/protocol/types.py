"""Primitive types of the Kafka wire format: fixed-width ints, varints, strings, bytes, Uuid.

Role: the building blocks every message codec (generated or hand-written) uses.
- `ByteReader` is a bounds-checked cursor over bytes/bytearray/memoryview. Every read checks
  the remaining length first, so a decoder sees `ProtocolError` and never IndexError,
  struct.error or UnicodeDecodeError.
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

import struct
from dataclasses import dataclass
from typing import Any

from metaquorum.protocol import ids
from metaquorum.protocol.errors import ProtocolError

Buffer = bytes | bytearray | memoryview


INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")

pack_int8 = INT8.pack
pack_int16 = INT16.pack
pack_int32 = INT32.pack
pack_int64 = INT64.pack
pack_uint16 = UINT16.pack
pack_uint32 = UINT32.pack
pack_float64 = FLOAT64.pack

MAX_INT16_STRING = 0x7FFF

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


# The Uuids read lately, by their bits: a request carries the same few (the topic's, the
# replicas' directories), and a frozen Uuid costs ~2 us to build; a Uuid is immutable, so one
# instance serves every read of the same bits. Bounded: cleared when full.
_UUIDS: dict[tuple[Any, ...], Uuid] = {}
_UUIDS_KEPT = 1024


class ByteReader:
    """Bounds-checked cursor over a buffer; every failure is a ProtocolError."""

    __slots__ = ("_buf", "_end", "pos")

    def __init__(self, data: Buffer, offset: int = 0, end: int | None = None) -> None:
        self._buf: Buffer = data
        self.pos = offset
        self._end = len(data) if end is None else end

    @property
    def remaining(self) -> int:
        return self._end - self.pos

    @property
    def buffer(self) -> Buffer:
        return self._buf

    def _need(self, n: int, what: str) -> int:
        pos = self.pos
        if n < 0 or pos + n > self._end:
            raise self._truncated(n, what, pos)
        self.pos = pos + n
        return pos

    def _truncated(self, n: int, what: str, pos: int) -> ProtocolError:
        return ProtocolError(
            f"truncated input: {what} needs {n} bytes at offset {pos}, "
            f"only {self._end - pos} remain"
        )

    # The fixed-width reads check the bounds inline (one call per read, not two: they are most
    # of a request's reads; docs/performance.md, round 5).
    def unpack(self, fmt: struct.Struct) -> tuple[Any, ...]:
        """The next `fmt.size` bytes unpacked by `fmt` (several fixed-width fields at once)."""
        pos = self.pos
        end = pos + fmt.size
        if end > self._end:
            raise self._truncated(fmt.size, "fixed-width fields", pos)
        self.pos = end
        return fmt.unpack_from(self._buf, pos)

    def take(self, n: int) -> int:
        """Reserve the next `n` bytes and return their start offset (for bulk `unpack_from`)."""
        return self._need(n, "fixed-width bytes")

    def ensure_end(self, what: str) -> None:
        if self.pos != self._end:
            raise ProtocolError(f"{self._end - self.pos} unexpected trailing bytes after {what}")

    def read_int8(self) -> int:
        pos = self.pos
        if pos >= self._end:
            raise self._truncated(1, "int8", pos)
        self.pos = pos + 1
        return int(INT8.unpack_from(self._buf, pos)[0])

    def read_int16(self) -> int:
        pos = self.pos
        if pos + 2 > self._end:
            raise self._truncated(2, "int16", pos)
        self.pos = pos + 2
        return int(INT16.unpack_from(self._buf, pos)[0])

    def read_int32(self) -> int:
        pos = self.pos
        if pos + 4 > self._end:
            raise self._truncated(4, "int32", pos)
        self.pos = pos + 4
        return int(INT32.unpack_from(self._buf, pos)[0])

    def read_int64(self) -> int:
        pos = self.pos
        if pos + 8 > self._end:
            raise self._truncated(8, "int64", pos)
        self.pos = pos + 8
        return int(INT64.unpack_from(self._buf, pos)[0])

    def read_uint16(self) -> int:
        return int(UINT16.unpack_from(self._buf, self._need(2, "uint16"))[0])

    def read_uint32(self) -> int:
        return int(UINT32.unpack_from(self._buf, self._need(4, "uint32"))[0])

    def read_float64(self) -> float:
        return float(FLOAT64.unpack_from(self._buf, self._need(8, "float64"))[0])

    def read_bool(self) -> bool:
        pos = self.pos
        if pos >= self._end:
            raise self._truncated(1, "bool", pos)
        self.pos = pos + 1
        return self._buf[pos] != 0

    def read_uuid(self) -> Uuid:
        pos = self.pos
        if pos + 16 > self._end:
            raise self._truncated(16, "uuid", pos)
        self.pos = pos + 16
        bits = UUID.unpack_from(self._buf, pos)
        uuid = _UUIDS.get(bits)
        if uuid is None:
            if len(_UUIDS) >= _UUIDS_KEPT:
                _UUIDS.clear()
            uuid = _UUIDS[bits] = Uuid(*bits)
        return uuid

    def read_raw(self, n: int) -> bytes:
        start = self._need(n, "bytes")
        return bytes(self._buf[start : start + n])

    def read_view(self, n: int) -> memoryview:
        start = self._need(n, "bytes")
        return memoryview(self._buf)[start : start + n]

    def read_unsigned_varint(self) -> int:
        """LEB128 of a 32-bit value; at most 5 bytes (Kafka `ByteUtils.readUnsignedVarint`)."""
        pos = self.pos
        if pos < self._end:
            b = self._buf[pos]
            if b < 0x80:  # one byte: every count, length and tag of a KRaft request
                self.pos = pos + 1
                return b
        return self._read_long_varint()

    def _read_long_varint(self) -> int:
        buf, pos, end = self._buf, self.pos, self._end
        value = 0
        shift = 0
        while True:
            if pos >= end:
                raise ProtocolError(f"truncated input: unterminated varint at offset {self.pos}")
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 28:
                raise ProtocolError(f"bad varint at offset {self.pos}: more than 5 bytes")
        self.pos = pos
        return value & 0xFFFFFFFF

    def read_unsigned_varlong(self) -> int:
        buf, pos, end = self._buf, self.pos, self._end
        value = 0
        shift = 0
        while True:
            if pos >= end:
                raise ProtocolError(f"truncated input: unterminated varlong at offset {self.pos}")
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise ProtocolError(f"bad varlong at offset {self.pos}: more than 10 bytes")
        self.pos = pos
        return value & 0xFFFFFFFFFFFFFFFF

    def read_varint(self) -> int:
        """ZigZag + LEB128 signed int32 (record fields)."""
        raw = self.read_unsigned_varint()
        return (raw >> 1) ^ -(raw & 1)

    def read_varlong(self) -> int:
        raw = self.read_unsigned_varlong()
        return (raw >> 1) ^ -(raw & 1)

    def _utf8(self, n: int, what: str) -> str:
        start = self._need(n, what)
        try:
            return str(self._buf[start : start + n], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"{what} at offset {start} is not valid UTF-8: {exc}") from None

    def read_string(self) -> str:
        n = self.read_int16()
        if n < 0:
            raise ProtocolError(f"non-nullable string has negative length {n}")
        return self._utf8(n, "string")

    def read_nullable_string(self) -> str | None:
        n = self.read_int16()
        if n < 0:
            if n != -1:
                raise ProtocolError(f"nullable string has invalid length {n}")
            return None
        return self._utf8(n, "string")

    def read_compact_string(self) -> str:
        n = self.read_unsigned_varint() - 1
        if n < 0:
            raise ProtocolError("non-nullable compact string is null")
        if n > MAX_INT16_STRING:
            raise ProtocolError(f"compact string length {n} exceeds 32767")
        return self._utf8(n, "compact string")

    def read_compact_nullable_string(self) -> str | None:
        n = self.read_unsigned_varint() - 1
        if n < 0:
            return None
        if n > MAX_INT16_STRING:
            raise ProtocolError(f"compact string length {n} exceeds 32767")
        return self._utf8(n, "compact string")

    def read_bytes(self) -> bytes:
        n = self.read_int32()
        if n < 0:
            raise ProtocolError(f"non-nullable bytes has negative length {n}")
        return self.read_raw(n)

    def read_nullable_bytes(self) -> bytes | None:
        n = self.read_int32()
        if n < 0:
            if n != -1:
                raise ProtocolError(f"nullable bytes has invalid length {n}")
            return None
        return self.read_raw(n)

    def read_compact_bytes(self) -> bytes:
        n = self.read_unsigned_varint() - 1
        if n < 0:
            raise ProtocolError("non-nullable compact bytes is null")
        return self.read_raw(n)

    def read_compact_nullable_bytes(self) -> bytes | None:
        n = self.read_unsigned_varint() - 1
        if n < 0:
            return None
        return self.read_raw(n)

    def read_array_length(self) -> int:
        """int32 count, -1 = null; a count larger than the bytes left is refused."""
        n = self.read_int32()
        if n < -1:
            raise ProtocolError(f"array has negative length {n}")
        if n > self._end - self.pos:
            raise ProtocolError(
                f"array of {n} elements but only {self._end - self.pos} bytes remain"
            )
        return n

    def read_compact_array_length(self) -> int:
        """unsigned varint N+1 (0 = null), returned as N (-1 = null)."""
        n = self.read_unsigned_varint() - 1
        if n > self._end - self.pos:
            raise ProtocolError(
                f"array of {n} elements but only {self._end - self.pos} bytes remain"
            )
        return n

    def skip(self, n: int) -> None:
        self._need(n, "skipped bytes")


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

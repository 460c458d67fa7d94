"""`ByteReader`: the bounds-checked cursor every decoder (generated or hand-written) reads with.

Role: reads the Kafka wire's primitive types (the encodings are listed in `types.py`, which
re-exports everything here) from bytes/bytearray/memoryview. Every read checks the remaining
length first, so a decoder sees `ProtocolError` and never IndexError, struct.error or
UnicodeDecodeError. The fixed-width reads check their bounds inline and `unpack` reads a run of
fixed fields in one call: they are most of a request's reads (docs/performance.md, round 5).
"""

from __future__ import annotations

import struct
from typing import Any

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.ids import UUID, Uuid

Buffer = bytes | bytearray | memoryview


INT8: struct.Struct = struct.Struct(">b")
INT16: struct.Struct = struct.Struct(">h")
INT32: struct.Struct = struct.Struct(">i")
INT64: struct.Struct = struct.Struct(">q")
UINT16: struct.Struct = struct.Struct(">H")
UINT32: struct.Struct = struct.Struct(">I")
FLOAT64: struct.Struct = struct.Struct(">d")


MAX_INT16_STRING = 0x7FFF


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

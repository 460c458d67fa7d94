"""Signed ZigZag varints and varlongs as used inside v2 records (reference §2.3, §3.2).

Role: encode/decode the record-level lengths and deltas. RPC bodies use unsigned varints
(protocol.types). Invariant: a varint never exceeds 5 bytes, a varlong 10; anything longer or
truncated raises ProtocolError.
"""

from __future__ import annotations

from metaquorum.protocol.errors import ProtocolError

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

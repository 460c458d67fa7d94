"""A read-only, zero-copy view of one v2 record batch (reference §3.1-§3.2).

Role: header fields, CRC validation and lazy record decoding over a memoryview slice.
Invariant: every decoding failure raises ProtocolError; nothing is copied until a record's
key/value is materialised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import crc32c

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.records.builder import Header, Record
from metaquorum.protocol.records.layout import (
    ATTRIBUTES_OFFSET,
    BATCH_PREFIX,
    BATCH_TAIL_HEADER,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    LOG_OVERHEAD,
    MAGIC_VALUE_V2,
    RECORD_BATCH_OVERHEAD,
    RECORDS_OFFSET,
    TRANSACTIONAL_FLAG_MASK,
    UINT32,
    CompressionType,
)
from metaquorum.protocol.records.varint import read_varint, read_varlong


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
        base_offset, length, epoch, magic = BATCH_PREFIX.unpack_from(buf, 0)
        if magic != MAGIC_VALUE_V2:
            raise ProtocolError(f"record batch at byte {position}: magic {magic}, expected 2")
        if length + LOG_OVERHEAD != len(buf):
            raise ProtocolError(
                f"record batch at byte {position}: length field {length} does not match "
                f"{len(buf) - LOG_OVERHEAD} bytes"
            )
        self.base_offset: int = base_offset
        self.partition_leader_epoch: int = epoch
        self.crc: int = UINT32.unpack_from(buf, CRC_OFFSET)[0]
        (
            self._attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = BATCH_TAIL_HEADER.unpack_from(buf, ATTRIBUTES_OFFSET)

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

"""Kafka's Produce (api key 0) at version 9, the first flexible version (KIP-482), hand-coded
until the protocol package carries a generated ProduceRequest/ProduceResponse.

Role: the client append path on `__cluster_metadata` partition 0: a leader answers once the
records commit (acks=-1). Layout (Kafka's ProduceRequest.json / ProduceResponse.json, v9):

    request:  TransactionalId compact-nullable-string, Acks int16, TimeoutMs int32,
              TopicData [Name compact-string, PartitionData [Index int32,
              Records compact-nullable-bytes, tags], tags], tags
    response: Responses [Name, PartitionResponses [Index int32, ErrorCode int16,
              BaseOffset int64, LogAppendTimeMs int64, LogStartOffset int64,
              RecordErrors [BatchIndex int32, BatchIndexErrorMessage compact-nullable, tags],
              ErrorMessage compact-nullable-string, tags], tags], ThrottleTimeMs int32, tags

Invariants: decoding raises only ProtocolError; unknown tagged fields are skipped (v9 defines
none); request header v2 and response header v1, as for every flexible version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.types import (
    ByteReader,
    write_compact_nullable_bytes,
    write_compact_nullable_string,
    write_compact_string,
    write_unsigned_varint,
)

PRODUCE_API_KEY = 0
PRODUCE_VERSION = 9


def _skip_tags(r: ByteReader) -> None:
    for _ in range(r.read_unsigned_varint()):
        r.read_unsigned_varint()
        r.skip(r.read_unsigned_varint())


def _array_len(r: ByteReader) -> int:
    n = r.read_compact_array_length()
    if n < 0:
        raise ProtocolError("Produce v9: null array")
    return n


@dataclass(frozen=True, slots=True)
class ProducePartition:
    index: int
    records: bytes | None


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    API_KEY = PRODUCE_API_KEY
    HIGHEST_SUPPORTED_VERSION = PRODUCE_VERSION
    acks: int = -1
    timeout_ms: int = 30000
    topics: list[tuple[str, list[ProducePartition]]] = field(default_factory=list)
    transactional_id: str | None = None

    def write(self, out: bytearray, version: int) -> None:
        if version != PRODUCE_VERSION:
            raise ProtocolError(f"Produce v{version} is not supported (only v9)")
        write_compact_nullable_string(out, self.transactional_id)
        out += self.acks.to_bytes(2, "big", signed=True)
        out += self.timeout_ms.to_bytes(4, "big", signed=True)
        write_unsigned_varint(out, len(self.topics) + 1)
        for name, parts in self.topics:
            write_compact_string(out, name)
            write_unsigned_varint(out, len(parts) + 1)
            for p in parts:
                out += p.index.to_bytes(4, "big", signed=True)
                write_compact_nullable_bytes(out, p.records)
                out.append(0)
            out.append(0)
        out.append(0)

    @classmethod
    def read(cls, r: ByteReader, version: int) -> ProduceRequest:
        if version != PRODUCE_VERSION:
            raise ProtocolError(f"Produce v{version} is not supported (only v9)")
        tid = r.read_compact_nullable_string()
        acks = r.read_int16()
        timeout = r.read_int32()
        topics = []
        for _ in range(_array_len(r)):
            name = r.read_compact_string()
            parts = []
            for _ in range(_array_len(r)):
                index = r.read_int32()
                records = r.read_compact_nullable_bytes()
                _skip_tags(r)
                parts.append(ProducePartition(index, records))
            _skip_tags(r)
            topics.append((name, parts))
        _skip_tags(r)
        return cls(acks, timeout, topics, tid)


@dataclass(frozen=True, slots=True)
class ProducePartitionResponse:
    index: int
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ProduceResponse:
    topics: list[tuple[str, list[ProducePartitionResponse]]] = field(default_factory=list)
    throttle_time_ms: int = 0

    def write(self, out: bytearray, version: int) -> None:
        write_unsigned_varint(out, len(self.topics) + 1)
        for name, parts in self.topics:
            write_compact_string(out, name)
            write_unsigned_varint(out, len(parts) + 1)
            for p in parts:
                out += p.index.to_bytes(4, "big", signed=True)
                out += p.error_code.to_bytes(2, "big", signed=True)
                for v in (p.base_offset, p.log_append_time_ms, p.log_start_offset):
                    out += v.to_bytes(8, "big", signed=True)
                write_unsigned_varint(out, 1)  # RecordErrors: empty
                write_compact_nullable_string(out, p.error_message)
                out.append(0)
            out.append(0)
        out += self.throttle_time_ms.to_bytes(4, "big", signed=True)
        out.append(0)

    @classmethod
    def read(cls, r: ByteReader, version: int) -> ProduceResponse:
        topics = []
        for _ in range(_array_len(r)):
            name = r.read_compact_string()
            parts = []
            for _ in range(_array_len(r)):
                index = r.read_int32()
                error = r.read_int16()
                base, append_time, start = r.read_int64(), r.read_int64(), r.read_int64()
                for _ in range(_array_len(r)):
                    r.read_int32()
                    r.read_compact_nullable_string()
                    _skip_tags(r)
                message = r.read_compact_nullable_string()
                _skip_tags(r)
                parts.append(
                    ProducePartitionResponse(index, error, base, append_time, start, message)
                )
            _skip_tags(r)
            topics.append((name, parts))
        throttle = r.read_int32()
        _skip_tags(r)
        return cls(topics, throttle)

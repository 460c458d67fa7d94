"""Kafka framing and request/response envelopes (reference §2.1-§2.2, §1.0, §1.2).

Role: bytes <-> (header, message) for one frame, for both sides of a connection. A frame is an
int32 big-endian size followed by that many bytes: request header + body, or response header +
body. Header versions follow Kafka's rule (`request_header_version`/`response_header_version`);
ApiVersions responses always use response header v0.

Invariants: `decode_request` raises only `ProtocolError` on bad bytes; an ApiVersions request of
an unsupported version is NOT an error: it decodes as `UnsupportedApiVersions` so the server can
answer at v0 with UNSUPPORTED_VERSION and its ApiKeys, as Kafka's `RequestContext` does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from metaquorum.protocol.api_keys import (
    API_VERSIONS,
    ApiKeys,
    api_key_of,
    check_version,
    request_header_version,
    response_header_version,
)
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import REQUESTS, RESPONSES, RequestHeaderData, ResponseHeaderData
from metaquorum.protocol.types import ByteReader
from metaquorum.runtime.produce import (
    PRODUCE_API_KEY,
    PRODUCE_VERSION,
    ProduceRequest,
    ProduceResponse,
)

SIZE = struct.Struct(">i")
HEADER_PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id


@dataclass(frozen=True, slots=True)
class InboundRequest:
    header: RequestHeaderData
    message: Any

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id


@dataclass(frozen=True, slots=True)
class UnsupportedApiVersions:
    """An ApiVersions request at a version we do not speak: answer v0 + UNSUPPORTED_VERSION."""

    correlation_id: int
    api_version: int


def _request_header_version(api_key: int, api_version: int) -> int:
    if api_key == PRODUCE_API_KEY:
        _check_produce(api_version)
        return 2
    return request_header_version(api_key, api_version)


def _response_header_version(api_key: int, api_version: int) -> int:
    if api_key == PRODUCE_API_KEY:
        _check_produce(api_version)
        return 1
    return response_header_version(api_key, api_version)


def _check_produce(api_version: int) -> None:
    if api_version != PRODUCE_VERSION:
        raise ProtocolError(f"unsupported version {api_version} of PRODUCE (we speak v9)")


def _request_class(api_key: int) -> Any:
    return ProduceRequest if api_key == PRODUCE_API_KEY else REQUESTS[api_key]


def _response_class(api_key: int) -> Any:
    return ProduceResponse if api_key == PRODUCE_API_KEY else RESPONSES[api_key]


def frame(payload: bytes) -> bytes:
    return SIZE.pack(len(payload)) + payload


def decode_request(data: bytes) -> InboundRequest | UnsupportedApiVersions:
    if len(data) < HEADER_PREFIX.size:
        raise ProtocolError(f"request of {len(data)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = HEADER_PREFIX.unpack_from(data)
    if api_key == PRODUCE_API_KEY:
        reader = ByteReader(data)
        header = RequestHeaderData.read(reader, _request_header_version(api_key, api_version))
        return InboundRequest(header, ProduceRequest.read(reader, api_version))
    key = api_key_of(api_key)
    rng = API_VERSIONS[key]
    if key == ApiKeys.API_VERSIONS and api_version not in rng:
        return UnsupportedApiVersions(correlation_id, api_version)
    check_version(api_key, api_version)
    reader = ByteReader(data)
    header = RequestHeaderData.read(reader, request_header_version(api_key, api_version))
    cls: Any = REQUESTS[api_key]
    message = cls.read(reader, api_version)
    return InboundRequest(header, message)


def encode_response(api_key: int, api_version: int, correlation_id: int, message: Any) -> bytes:
    """A whole response frame (size prefix included)."""
    out = bytearray(SIZE.size)
    ResponseHeaderData(correlation_id=correlation_id).write(
        out, _response_header_version(api_key, api_version)
    )
    message.write(out, api_version)
    SIZE.pack_into(out, 0, len(out) - SIZE.size)
    return bytes(out)


def encode_request(
    api_key: int, api_version: int, correlation_id: int, message: Any, client_id: str
) -> bytes:
    out = bytearray(SIZE.size)
    header = RequestHeaderData(
        request_api_key=api_key,
        request_api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    header.write(out, _request_header_version(api_key, api_version))
    message.write(out, api_version)
    SIZE.pack_into(out, 0, len(out) - SIZE.size)
    return bytes(out)


def peek_correlation_id(data: bytes) -> int:
    if len(data) < 4:
        raise ProtocolError("response shorter than a response header")
    value: int = SIZE.unpack_from(data)[0]
    return value


def decode_response(api_key: int, api_version: int, data: bytes) -> tuple[int, Any]:
    """(correlation id, message) of a response frame's payload."""
    reader = ByteReader(data)
    header = ResponseHeaderData.read(reader, _response_header_version(api_key, api_version))
    cls: Any = _response_class(api_key)
    message = cls.read(reader, api_version)
    return header.correlation_id, message


def highest_version(api_key: ApiKeys) -> int:
    return API_VERSIONS[api_key].highest

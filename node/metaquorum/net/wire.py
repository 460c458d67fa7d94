"""Kafka framing and request/response envelopes (reference §2.1-§2.2, §1.0, §1.2).

Role: bytes <-> (header, message) for one frame, for both sides of a connection. A frame is an
int32 big-endian size followed by that many bytes: request header + body, or response header +
body. Header versions follow Kafka's rule (`request_header_version`/`response_header_version`);
ApiVersions responses always use response header v0.

Every API, Produce included, goes through the generated classes (`REQUESTS` / `RESPONSES`).
Before encoding, `fit_to_version` leaves out tagged fields the negotiated version does not
carry, so handlers may fill the newest form (KIP-482, KIP-951 for Produce v10+).

Invariants: `decode_request` raises only `ProtocolError` on bad bytes; an ApiVersions request of
an unsupported version is NOT an error: it decodes as `UnsupportedApiVersions` so the server can
answer at v0 with UNSUPPORTED_VERSION and its ApiKeys, as Kafka's `RequestContext` does.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, TypeAlias

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
from metaquorum.protocol.schema import BY_NAME
from metaquorum.protocol.schema.dsl import Field, Message
from metaquorum.protocol.types import ByteReader

SIZE = struct.Struct(">i")
HEADER_PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id


class InboundRequest:
    """A decoded request: its header and message. A plain class (a frozen dataclass's `__init__`
    is exec'd, so interpreted even in the compiled build, and sets each field through
    `object.__setattr__`: once per request); its attributes are Final to the type checker."""

    __slots__ = ("header", "message")

    def __init__(self, header: RequestHeaderData, message: Any) -> None:
        self.header: Final = header
        self.message: Final = message

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


def frame(payload: bytes) -> bytes:
    return SIZE.pack(len(payload)) + payload


class FrameReader:
    """Cuts size-prefixed frames out of a byte stream as it arrives (both sides of a
    connection). The bytes of an incomplete frame are kept as chunks and joined only once
    the whole frame is there, so a large frame arriving in many reads costs one copy."""

    __slots__ = ("chunks", "have", "max_size", "min_size", "need")

    def __init__(self, max_size: int, min_size: int = 0) -> None:
        self.max_size = max_size
        self.min_size = min_size
        self.chunks: list[bytes] = []
        self.have = 0
        self.need = 0

    @property
    def partial(self) -> bool:
        """Part of a frame has arrived and waits for the rest."""
        return bool(self.chunks)

    def feed(self, data: bytes) -> list[bytes]:
        """The frames (payloads without the size) completed by `data`; `ProtocolError` on a
        size outside [min_size, max_size] (the stream cannot be resynchronised after it)."""
        if self.chunks:
            self.chunks.append(data)
            self.have += len(data)
            if self.have < self.need:
                return []
            data = b"".join(self.chunks)
            self.chunks = []
        frames: list[bytes] = []
        pos, n = 0, len(data)
        need = SIZE.size
        while n - pos >= SIZE.size:
            (size,) = SIZE.unpack_from(data, pos)
            if size < self.min_size or size > self.max_size:
                raise ProtocolError(f"frame size {size} outside [{self.min_size}, {self.max_size}]")
            end = pos + SIZE.size + size
            if end > n:
                need = SIZE.size + size
                break
            frames.append(data[pos + SIZE.size : end])
            pos = end
        if pos < n:
            rest = data[pos:]
            self.chunks, self.have, self.need = [rest], len(rest), need
        return frames


# (api key, version) -> header version, for every pair we speak: one dict lookup per frame
# instead of the checks' half-dozen calls (docs/performance.md, round 5); a pair missing here
# goes the checked way below, which raises (or answers an unsupported ApiVersions).
_REQUEST_HEADER: dict[tuple[int, int], int] = {
    (int(k), v): request_header_version(k, v)
    for k, rng in API_VERSIONS.items()
    for v in range(rng.lowest, rng.highest + 1)
}
_RESPONSE_HEADER: dict[tuple[int, int], int] = {
    (int(k), v): response_header_version(k, v)
    for k, rng in API_VERSIONS.items()
    for v in range(rng.lowest, rng.highest + 1)
}


def decode_request(data: bytes) -> InboundRequest | UnsupportedApiVersions:
    if len(data) < HEADER_PREFIX.size:
        raise ProtocolError(f"request of {len(data)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = HEADER_PREFIX.unpack_from(data)
    header_version = _REQUEST_HEADER.get((api_key, api_version))
    if header_version is None:
        key = api_key_of(api_key)
        rng = API_VERSIONS[key]
        if key == ApiKeys.API_VERSIONS and api_version not in rng:
            return UnsupportedApiVersions(correlation_id, api_version)
        check_version(api_key, api_version)
        header_version = request_header_version(api_key, api_version)
    reader = ByteReader(data)
    header = RequestHeaderData.read(reader, header_version)
    cls: Any = REQUESTS[api_key]
    message = cls.read(reader, api_version)
    return InboundRequest(header, message)


def _response_header_version(api_key: int, api_version: int) -> int:
    version = _RESPONSE_HEADER.get((api_key, api_version))
    return response_header_version(api_key, api_version) if version is None else version


def encode_response(api_key: int, api_version: int, correlation_id: int, message: Any) -> bytes:
    """A whole response frame (size prefix included)."""
    out = bytearray(SIZE.size)
    ResponseHeaderData(correlation_id, []).write(
        out, _response_header_version(api_key, api_version)
    )
    fit_to_version(message, api_version).write(out, api_version)
    SIZE.pack_into(out, 0, len(out) - SIZE.size)
    return bytes(out)


def encode_request(
    api_key: int, api_version: int, correlation_id: int, message: Any, client_id: str
) -> bytes:
    out = bytearray(SIZE.size)
    header_version = _REQUEST_HEADER.get((api_key, api_version))
    if header_version is None:
        header_version = request_header_version(api_key, api_version)
    RequestHeaderData(api_key, api_version, correlation_id, client_id, []).write(
        out, header_version
    )
    fit_to_version(message, api_version).write(out, api_version)
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
    cls: Any = RESPONSES[api_key]
    message = cls.read(reader, api_version)
    return header.correlation_id, message


# A path to the tagged fields a version cannot carry: field name -> None (reset it) or the
# sub-path inside a struct (or each element of a struct array).
_Prune: TypeAlias = dict[str, "_Prune | None"]


def fit_to_version(message: Any, version: int) -> Any:
    """`message` without the tagged fields that `version` does not carry (KIP-482: tagged
    fields are optional). Handlers build the newest form (e.g. Produce's CurrentLeader and
    NodeEndpoints, v10+) and each connection gets what its negotiated version has; a message
    whose version carries all its tagged fields is returned as is (one cached lookup)."""
    key = (message.__class__, version)
    prune = _PRUNES.get(key)
    if prune is None:
        schema = BY_NAME.get(getattr(message, "NAME", ""))
        prune = _PRUNES[key] = {} if schema is None else _prune(schema.name, version)
    return _apply(message, prune) if prune else message


_PRUNES: dict[tuple[type, int], _Prune] = {}


@cache
def _prune(name: str, version: int) -> _Prune:
    msg = BY_NAME[name]
    return _prune_fields(msg, msg.fields, version)


def _prune_fields(msg: Message, fields: tuple[Field, ...], version: int) -> _Prune:
    out: _Prune = {}
    for fld in fields:
        if version not in fld.version_range():
            if fld.tag is not None:
                out[fld.py_name] = None
            continue
        if fld.is_struct:
            sub = _prune_fields(msg, msg.struct_fields(fld.element_type), version)
            if sub:
                out[fld.py_name] = sub
    return out


def _apply(value: Any, prune: _Prune) -> Any:
    changes: dict[str, Any] = {}
    default = None
    for name, sub in prune.items():
        current = getattr(value, name)
        if sub is None:
            if default is None:
                default = type(value)()
            if current != getattr(default, name):
                changes[name] = getattr(default, name)
        elif isinstance(current, list):
            changes[name] = [_apply(e, sub) for e in current]
        else:
            changes[name] = _apply(current, sub)
    return dataclasses.replace(value, **changes) if changes else value


def highest_version(api_key: ApiKeys) -> int:
    return API_VERSIONS[api_key].highest

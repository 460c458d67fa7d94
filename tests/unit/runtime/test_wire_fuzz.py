"""Malformed bytes never crash the node: request decoding raises only ProtocolError (which
closes that connection), whatever the frame payload."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.net.wire import InboundRequest, UnsupportedApiVersions, decode_request
from metaquorum.protocol.api_keys import API_VERSIONS
from metaquorum.protocol.errors import ProtocolError


def _decodes_or_refuses(payload: bytes) -> None:
    """Either a request (whose header echoes the bytes) or ProtocolError; nothing else."""
    try:
        result = decode_request(payload)
    except ProtocolError:
        return
    if isinstance(result, UnsupportedApiVersions):
        assert struct.unpack_from(">hhi", payload) == (
            18,
            result.api_version,
            result.correlation_id,
        )
    else:
        assert isinstance(result, InboundRequest)
        key, version, cid = struct.unpack_from(">hhi", payload)
        assert (result.api_key, result.api_version, result.correlation_id) == (key, version, cid)


KEYS = [0, *(int(k) for k in API_VERSIONS), 999, -1]


@settings(max_examples=400, deadline=None)
@given(
    key=st.sampled_from(KEYS),
    version=st.integers(-2, 20),
    cid=st.integers(-(2**31), 2**31 - 1),
    body=st.binary(max_size=200),
)
def test_decode_request_raises_only_protocol_error(
    key: int, version: int, cid: int, body: bytes
) -> None:
    payload = struct.pack(">hhi", key, version, cid) + body
    _decodes_or_refuses(payload)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_any_short_payload(payload: bytes) -> None:
    _decodes_or_refuses(payload)

"""Framing, header versions, ApiVersions (unsupported-version rule, kraft.version feature) and
DescribeCluster answers of a controller (reference §1.2, §1.12, §2)."""

from __future__ import annotations

import struct

import pytest
from metaquorum.net.endpoint import Endpoint
from metaquorum.net.wire import (
    InboundRequest,
    UnsupportedApiVersions,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from metaquorum.protocol.api_keys import API_VERSIONS, ApiKeys
from metaquorum.protocol.errors import Errors, ProtocolError
from metaquorum.protocol.messages import (
    ApiVersionsRequestData,
    ApiVersionsResponseData,
    DescribeClusterRequestData,
    VoteRequestData,
)
from metaquorum.protocol.types import ByteReader
from metaquorum.runtime.apis import api_versions_response, describe_cluster_response


def _payload(frame: bytes) -> bytes:
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


def test_request_round_trip_with_flexible_header() -> None:
    msg = VoteRequestData(cluster_id="abc", voter_id=3)
    frame = encode_request(ApiKeys.VOTE, 2, 77, msg, "raft-client-1")
    req = decode_request(_payload(frame))
    assert isinstance(req, InboundRequest)
    assert (req.api_key, req.api_version, req.correlation_id) == (52, 2, 77)
    assert req.header.client_id == "raft-client-1"
    assert req.message == msg


def test_header_bytes_are_kafkas_v1_for_a_non_flexible_request() -> None:
    # ApiVersions v0 uses request header v1: key, version, correlation id, int16 client id.
    frame = encode_request(ApiKeys.API_VERSIONS, 0, 5, ApiVersionsRequestData(), "c")
    assert _payload(frame) == struct.pack(">hhih", 18, 0, 5, 1) + b"c"


def test_unsupported_api_versions_request_is_answered_at_v0() -> None:
    # A client newer than us sends ApiVersions v9 with a body we cannot parse.
    payload = struct.pack(">hhi", 18, 9, 42) + b"\x01\x02garbage"
    req = decode_request(payload)
    assert req == UnsupportedApiVersions(42, 9)
    frame = encode_response(18, 0, 42, api_versions_response(0, Errors.UNSUPPORTED_VERSION))
    cid, body = decode_response(18, 0, _payload(frame))
    assert cid == 42 and body.error_code == 35
    keys = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert keys[18] == (0, 4) and keys[ApiKeys.FETCH] == (4, 18)


def test_unsupported_version_of_another_api_and_unknown_key_raise() -> None:
    with pytest.raises(ProtocolError):
        decode_request(struct.pack(">hhi", 52, 7, 1) + b"\x00" * 8)
    with pytest.raises(ProtocolError):
        decode_request(struct.pack(">hhi", 999, 0, 1))
    with pytest.raises(ProtocolError):
        decode_request(b"\x00\x12")


def test_api_versions_advertises_kraft_version_from_v4_only() -> None:
    v4 = api_versions_response(4)
    # kraft.version 0-1: a Kafka 4.3 leader reads this range before accepting AddRaftVoter, and
    # this node runs KIP-853's dynamic voters (issue 14).
    assert [(f.name, f.min_version, f.max_version) for f in v4.supported_features] == [
        ("kraft.version", 0, 1)
    ]
    # "In v0-v3, features with MinSupportedVersion = 0 are omitted."
    assert api_versions_response(3).supported_features == []
    assert {k.api_key for k in v4.api_keys} == {0} | {int(k) for k in API_VERSIONS}
    # One entry per api key, each with the range we really serve (Produce 3-13 included).
    keys = [k.api_key for k in v4.api_keys]
    assert len(keys) == len(set(keys))
    ranges = {k.api_key: (k.min_version, k.max_version) for k in v4.api_keys}
    assert ranges == {int(k): (r.lowest, r.highest) for k, r in API_VERSIONS.items()}
    assert ranges[int(ApiKeys.PRODUCE)] == (3, 13)
    # ApiVersions responses use response header v0 even at v3+: cid then body, no tag buffer.
    frame = encode_response(18, 4, 9, v4)
    assert _payload(frame)[:4] == struct.pack(">i", 9)
    r = ByteReader(_payload(frame), 4)
    assert ApiVersionsResponseData.read(r, 4) == v4


def test_describe_cluster_as_a_controller() -> None:
    controllers = {1: Endpoint("h1", 9093), 2: Endpoint("h2", 9093)}
    ok = describe_cluster_response(
        DescribeClusterRequestData(endpoint_type=2),
        1,
        cluster_id="cid",
        leader_id=2,
        controllers=controllers,
    )
    assert (ok.error_code, ok.endpoint_type, ok.controller_id, ok.cluster_id) == (0, 2, 2, "cid")
    assert [(b.broker_id, b.host, b.port) for b in ok.brokers] == [(1, "h1", 9093), (2, "h2", 9093)]
    unknown_leader = describe_cluster_response(
        DescribeClusterRequestData(endpoint_type=2),
        1,
        cluster_id="c",
        leader_id=-1,
        controllers=controllers,
    )
    assert unknown_leader.controller_id == -1
    broker = describe_cluster_response(
        DescribeClusterRequestData(endpoint_type=1),
        1,
        cluster_id="c",
        leader_id=1,
        controllers=controllers,
    )
    assert broker.error_code == Errors.MISMATCHED_ENDPOINT_TYPE
    v0 = describe_cluster_response(
        DescribeClusterRequestData(endpoint_type=1),
        0,
        cluster_id="c",
        leader_id=1,
        controllers=controllers,
    )
    assert v0.error_code == Errors.INVALID_REQUEST
    odd = describe_cluster_response(
        DescribeClusterRequestData(endpoint_type=7),
        1,
        cluster_id="c",
        leader_id=1,
        controllers=controllers,
    )
    assert odd.error_code == Errors.UNSUPPORTED_ENDPOINT_TYPE

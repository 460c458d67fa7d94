"""Produce on the node through the generated classes: framing at every version, the pure checks
of `runtime.produce`, the version fit of tagged fields, and a non-leader's answer."""

from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace
from typing import Any

import pytest
from metaquorum.net.endpoint import Endpoint
from metaquorum.net.wire import (
    InboundRequest,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    fit_to_version,
)
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.control_records import snapshot_footer_batch
from metaquorum.protocol.errors import Errors, ProtocolError
from metaquorum.protocol.messages import (
    FetchResponseData,
    ProduceRequestData,
    ProduceResponseData,
)
from metaquorum.protocol.records import Header, SimpleRecord, build_batch
from metaquorum.protocol.types import METADATA_RAFT_TOPIC, METADATA_TOPIC_ID, Uuid
from metaquorum.runtime.client_api import ClientApi
from metaquorum.runtime.produce import batch_values, targets_metadata_partition

BATCH = build_batch(0, -1, [b"k=v", b"x"], timestamp_ms=1_700_000_000_000)


def _request(name: str = "__cluster_metadata", topic_id: Uuid = Uuid.ZERO) -> ProduceRequestData:
    return ProduceRequestData(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestData.TopicProduceData(
                name=name,
                topic_id=topic_id,
                partition_data=[ProduceRequestData.PartitionProduceData(index=0, records=BATCH)],
            )
        ],
    )


@pytest.mark.parametrize(("version", "header_version"), [(3, 1), (8, 1), (9, 2), (13, 2)])
def test_produce_request_frames_at_every_header_version(version: int, header_version: int) -> None:
    msg = _request() if version < 13 else _request("", METADATA_TOPIC_ID)
    frame = encode_request(ApiKeys.PRODUCE, version, 11, msg, "c")
    payload = frame[4:]
    # request header v1: int16 client id; v2: the same plus an empty tag buffer.
    head = (
        struct.pack(">hhih", 0, version, 11, 1) + b"c" + (b"\x00" if header_version == 2 else b"")
    )
    assert payload.startswith(head)
    req = decode_request(payload)
    assert isinstance(req, InboundRequest) and req.message == msg


@pytest.mark.parametrize("version", [0, 2, 14])
def test_produce_versions_outside_3_13_are_refused(version: int) -> None:
    with pytest.raises(ProtocolError, match="PRODUCE"):
        decode_request(struct.pack(">hhih", 0, version, 1, -1) + b"\x00" * 16)


def test_targets_metadata_partition_by_name_or_id() -> None:
    by_name = _request().topic_data[0]
    by_id = _request("", METADATA_TOPIC_ID).topic_data[0]
    other = _request("other").topic_data[0]
    assert targets_metadata_partition(by_name, 0) and targets_metadata_partition(by_id, 0)
    assert not targets_metadata_partition(by_name, 1)
    assert not targets_metadata_partition(other, 0)


def test_batch_values_and_refusals() -> None:
    assert batch_values(BATCH + BATCH) == [b"k=v", b"x", b"k=v", b"x"]
    damaged = bytearray(BATCH)
    damaged[-1] ^= 0xFF  # inside the CRC-covered part
    error = batch_values(bytes(damaged))
    assert isinstance(error, tuple) and error[0] == Errors.CORRUPT_MESSAGE
    error = batch_values(BATCH[:-3])
    assert isinstance(error, tuple) and error[0] == Errors.CORRUPT_MESSAGE
    control = snapshot_footer_batch(0, 1, timestamp_ms=0)
    assert batch_values(control) == (Errors.INVALID_RECORD, "control batches cannot be produced")
    assert batch_values(None) == (Errors.INVALID_RECORD, "no records")


@pytest.mark.parametrize(
    "record",
    [
        SimpleRecord(b"v", key=b"k"),
        SimpleRecord(b"v", headers=(Header("h", b"x"),)),
        SimpleRecord(None),
    ],
    ids=["key", "headers", "null-value"],
)
def test_records_the_log_cannot_hold_are_refused_not_truncated(record: SimpleRecord) -> None:
    """A key, headers or a null value would be acknowledged and silently lost (KRaft's log
    holds value-only records), so the whole produce is refused with INVALID_RECORD."""
    batch = build_batch(0, 0, [b"ok", record], timestamp_ms=0)
    error = batch_values(batch)
    assert isinstance(error, tuple) and error[0] == Errors.INVALID_RECORD
    assert "offset delta 1" in error[1] and "value only" in error[1]


def test_fit_to_version_drops_only_tagged_fields_the_version_lacks() -> None:
    endpoints = [FetchResponseData.NodeEndpoint(node_id=1, host="h", port=1)]
    msg = FetchResponseData(node_endpoints=endpoints)
    assert fit_to_version(msg, 16) is msg  # v16 carries NodeEndpoints: untouched
    assert fit_to_version(msg, 15).node_endpoints == []
    part = ProduceResponseData.PartitionProduceResponse(
        current_leader=ProduceResponseData.LeaderIdAndEpoch(leader_id=3, leader_epoch=4)
    )
    resp = ProduceResponseData(
        responses=[ProduceResponseData.TopicProduceResponse(partition_responses=[part])]
    )
    fitted = fit_to_version(resp, 9)
    assert fitted.responses[0].partition_responses[0].current_leader.leader_id == -1
    assert fit_to_version(resp, 10) is resp


def _non_leader_api() -> ClientApi:
    driver: Any = SimpleNamespace(
        hw_listeners=[],
        node=SimpleNamespace(state=object(), leader_id=2, epoch=7, topic=METADATA_RAFT_TOPIC),
        voter_endpoints={1: Endpoint("h1", 9093), 2: Endpoint("h2", 9094)},
    )
    return ClientApi(driver)


@pytest.mark.parametrize("version", [9, 10, 13])
def test_non_leader_answers_with_the_leader_when_the_version_has_it(version: int) -> None:
    api = _non_leader_api()
    request = _request() if version < 13 else _request("", METADATA_TOPIC_ID)
    answer = asyncio.run(api.produce(request))
    frame = encode_response(ApiKeys.PRODUCE, version, 5, answer)
    cid, back = decode_response(ApiKeys.PRODUCE, version, frame[4:])
    assert cid == 5
    topic = back.responses[0]
    assert (topic.name, topic.topic_id) == (
        ("__cluster_metadata", Uuid.ZERO) if version < 13 else ("", METADATA_TOPIC_ID)
    )
    p = topic.partition_responses[0]
    assert p.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    leader = (p.current_leader.leader_id, p.current_leader.leader_epoch)
    nodes = [(n.node_id, n.host, n.port) for n in back.node_endpoints]
    if version >= 10:
        assert leader == (2, 7) and nodes == [(2, "h2", 9094)]
    else:
        assert leader == (-1, -1) and nodes == []


def test_wrong_partition_and_acks_are_refused_before_leadership() -> None:
    api = _non_leader_api()
    other = asyncio.run(api.produce(_request("other")))
    assert other.responses[0].partition_responses[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    acks1 = ProduceRequestData(acks=1, timeout_ms=1, topic_data=_request().topic_data)
    answer = asyncio.run(api.produce(acks1)).responses[0].partition_responses[0]
    assert answer.error_code == Errors.INVALID_REQUIRED_ACKS


@pytest.mark.parametrize("version", range(3, 14))
@pytest.mark.parametrize(
    ("name", "topic_id"), [("__cluster_metadata", Uuid.ZERO), ("", METADATA_TOPIC_ID)]
)
def test_success_template_bytes_equal_the_generic_encoder(
    version: int, name: str, topic_id: Uuid
) -> None:
    from metaquorum.runtime.produce import SuccessTemplates, success_response

    topic = ProduceRequestData.TopicProduceData(name=name, topic_id=topic_id)
    templates = SuccessTemplates()
    for cid, base, start in [(0, 0, 0), (7, 41, 3), (-5, 2**40 + 3, 2**33), (2**31 - 1, 1, 0)]:
        generic = encode_response(
            int(ApiKeys.PRODUCE), version, cid, success_response(topic, base, start)
        )
        assert templates.encode(topic, version, cid, base, start) == generic
        decoded = decode_response(int(ApiKeys.PRODUCE), version, generic[4:])
        part = decoded[1].responses[0].partition_responses[0]
        assert (part.base_offset, part.error_code) == (base, 0)

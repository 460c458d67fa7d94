"""The generated Produce classes and the node's Produce answers against Kafka 4.3.1's
ProduceRequestData / ProduceResponseData (the oracle): same bytes both ways at v9 (the bench's
load generator), v10 (tagged CurrentLeader / NodeEndpoints, KIP-951) and v13 (topic ids), and
an answer built in the newest form is written as Kafka writes it at an older version."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from metaquorum.net.endpoint import Endpoint
from metaquorum.net.wire import fit_to_version
from metaquorum.protocol.errors import Errors, ProtocolError
from metaquorum.protocol.messages import ProduceRequestData, ProduceResponseData
from metaquorum.protocol.records import build_batch
from metaquorum.protocol.types import METADATA_TOPIC_ID, Uuid
from metaquorum.runtime.produce import node_endpoints, partition_response

from tests.conformance.oracle_client import KafkaOracle

pytestmark = pytest.mark.conformance

TOPIC = "__cluster_metadata"
BATCH = build_batch(0, -1, [b"a", b"bb", b""], timestamp_ms=1_700_000_000_000)


def _request(version: int) -> tuple[ProduceRequestData, dict[str, Any]]:
    topic: dict[str, Any] = {
        "partitionData": [{"index": 0, "records": base64.b64encode(BATCH).decode()}]
    }
    if version >= 13:
        topic["topicId"] = str(METADATA_TOPIC_ID)
    else:
        topic["name"] = TOPIC
    kafka_json = {"transactionalId": None, "acks": -1, "timeoutMs": 5000, "topicData": [topic]}
    ours = ProduceRequestData(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequestData.TopicProduceData(
                name=TOPIC if version < 13 else "",
                topic_id=METADATA_TOPIC_ID if version >= 13 else Uuid.ZERO,
                partition_data=[ProduceRequestData.PartitionProduceData(index=0, records=BATCH)],
            )
        ],
    )
    return ours, kafka_json


@pytest.mark.parametrize("version", [3, 8, 9, 12, 13])
def test_produce_request_bytes_equal_kafkas(kafka_oracle: KafkaOracle, version: int) -> None:
    ours, kafka_json = _request(version)
    kafka = kafka_oracle.encode("ProduceRequest", version, kafka_json)
    assert ours.encode(version) == kafka
    assert ProduceRequestData.decode(kafka, version) == ours


def _not_leader_answer() -> ProduceResponseData:
    """The node's answer for one committed and one refused partition, newest form."""
    ok = partition_response(0, base_offset=42, log_start_offset=0)
    refused = partition_response(1, Errors.NOT_LEADER_OR_FOLLOWER, "not the leader", leader=(2, 7))
    topics = [
        ProduceResponseData.TopicProduceResponse(
            name=TOPIC, topic_id=METADATA_TOPIC_ID, partition_responses=[ok, refused]
        )
    ]
    voters = {1: Endpoint("h1", 9093), 2: Endpoint("h2", 9094)}
    return ProduceResponseData(
        responses=topics, throttle_time_ms=3, node_endpoints=node_endpoints(topics, voters)
    )


def _kafka_response_json(version: int) -> dict[str, Any]:
    def part(index: int, error: int, base: int, start: int, msg: str | None) -> dict[str, Any]:
        p: dict[str, Any] = {
            "index": index,
            "errorCode": error,
            "baseOffset": base,
            "logAppendTimeMs": -1,
            "logStartOffset": start,
        }
        if version >= 8:
            p["recordErrors"] = []
            p["errorMessage"] = msg
        if version >= 10 and error == 6:
            p["currentLeader"] = {"leaderId": 2, "leaderEpoch": 7}
        return p

    topic: dict[str, Any] = (
        {"topicId": str(METADATA_TOPIC_ID)} if version >= 13 else {"name": TOPIC}
    )
    topic["partitionResponses"] = [part(0, 0, 42, 0, None), part(1, 6, -1, -1, "not the leader")]
    out: dict[str, Any] = {"responses": [topic], "throttleTimeMs": 3}
    if version >= 10:
        out["nodeEndpoints"] = [{"nodeId": 2, "host": "h2", "port": 9094, "rack": None}]
    return out


@pytest.mark.parametrize("version", [3, 5, 8, 9, 10, 12, 13])
def test_node_answer_is_written_as_kafka_writes_it(kafka_oracle: KafkaOracle, version: int) -> None:
    answer = _not_leader_answer()
    kafka = kafka_oracle.encode("ProduceResponse", version, _kafka_response_json(version))
    # v3-7 have no ErrorMessage (ignorable: written by neither), v3-12 no TopicId, v13 no Name.
    ours = fit_to_version(answer, version).encode(version)
    assert ours == kafka
    back = ProduceResponseData.decode(kafka, version)
    refused = back.responses[0].partition_responses[1]
    if version >= 10:
        assert (refused.current_leader.leader_id, refused.current_leader.leader_epoch) == (2, 7)
        assert [(n.node_id, n.host, n.port) for n in back.node_endpoints] == [(2, "h2", 9094)]
    else:
        assert refused.current_leader == ProduceResponseData.LeaderIdAndEpoch()
        assert back.node_endpoints == []


def test_newest_form_cannot_be_written_at_v9_without_fitting() -> None:
    """The generated writer refuses a tagged v10 field at v9, as Kafka's does: the fit is needed."""
    with pytest.raises(ProtocolError, match="non-default"):
        _not_leader_answer().encode(9)

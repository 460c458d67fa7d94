"""Our hand-coded Produce v9 (runtime.produce) against Kafka 4.3.1's ProduceRequestData /
ProduceResponseData: same bytes both ways."""

from __future__ import annotations

import base64

import pytest
from metaquorum.protocol.records import build_batch
from metaquorum.protocol.types import ByteReader
from metaquorum.runtime.produce import (
    ProducePartition,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
)

from tests.conformance.oracle_client import KafkaOracle

pytestmark = pytest.mark.conformance


def _ours(message: ProduceRequest | ProduceResponse) -> bytes:
    out = bytearray()
    message.write(out, 9)
    return bytes(out)


def test_produce_request_v9_bytes_equal_kafkas(kafka_oracle: KafkaOracle) -> None:
    batch = build_batch(0, -1, [b"a", b"bb", b""], timestamp_ms=1_700_000_000_000)
    req = ProduceRequest(
        acks=-1, timeout_ms=5000, topics=[("__cluster_metadata", [ProducePartition(0, batch)])]
    )
    kafka_json = {
        "transactionalId": None,
        "acks": -1,
        "timeoutMs": 5000,
        "topicData": [
            {
                "name": "__cluster_metadata",
                "partitionData": [{"index": 0, "records": base64.b64encode(batch).decode()}],
            }
        ],
    }
    kafka = kafka_oracle.encode("ProduceRequest", 9, kafka_json)
    assert _ours(req) == kafka
    assert ProduceRequest.read(ByteReader(kafka), 9) == req


def test_produce_response_v9_bytes_equal_kafkas(kafka_oracle: KafkaOracle) -> None:
    resp = ProduceResponse(
        [
            (
                "__cluster_metadata",
                [
                    ProducePartitionResponse(0, 0, 42, -1, 0, None),
                    ProducePartitionResponse(1, 6, -1, -1, -1, "not the leader"),
                ],
            )
        ],
        throttle_time_ms=3,
    )
    kafka_json = {
        "responses": [
            {
                "name": "__cluster_metadata",
                "partitionResponses": [
                    {
                        "index": 0,
                        "errorCode": 0,
                        "baseOffset": 42,
                        "logAppendTimeMs": -1,
                        "logStartOffset": 0,
                        "recordErrors": [],
                        "errorMessage": None,
                    },
                    {
                        "index": 1,
                        "errorCode": 6,
                        "baseOffset": -1,
                        "logAppendTimeMs": -1,
                        "logStartOffset": -1,
                        "recordErrors": [],
                        "errorMessage": "not the leader",
                    },
                ],
            }
        ],
        "throttleTimeMs": 3,
    }
    kafka = kafka_oracle.encode("ProduceResponse", 9, kafka_json)
    assert _ours(resp) == kafka
    assert ProduceResponse.read(ByteReader(kafka), 9) == resp

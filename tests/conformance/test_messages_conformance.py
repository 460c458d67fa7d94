"""Message conformance: our codecs against Kafka's generated message classes (via the oracle).

For every message in metaquorum.protocol.messages.MESSAGES and every version, many generated values
go both ways: our bytes decoded by Kafka give Kafka JSON equal to ours; Kafka's bytes for our JSON
equal our bytes; our decode of Kafka's bytes equals our value. The first tests check the oracle
itself (Kafka agreeing with itself and with hand-derived bytes) so that a failure below is ours.
"""

from __future__ import annotations

import pytest

from tests.conformance.oracle_client import KafkaOracle, OracleError

pytestmark = pytest.mark.conformance

VOTE_V2 = {
    "clusterId": "abc",
    "voterId": 3,
    "topics": [
        {
            "topicName": "__cluster_metadata",
            "partitions": [
                {
                    "partitionIndex": 0,
                    "replicaEpoch": 5,
                    "replicaId": 1,
                    "replicaDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ",
                    "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA",
                    "lastOffsetEpoch": 4,
                    "lastOffset": 100,
                    "preVote": True,
                }
            ],
        }
    ],
}


def test_oracle_vote_request_both_ways(kafka_oracle: KafkaOracle) -> None:
    data = kafka_oracle.encode("VoteRequest", 2, VOTE_V2)
    # Hand-derived from the schema (reference §1.3, §2.3): compact nullable string "abc",
    # int32 voterId, compact arrays, int32/int64 fields, 16-byte uuids, bool, empty tag sections.
    expected = (
        "04616263" + "00000003" + "02" + "13" + b"__cluster_metadata".hex() + "02"
        "00000000"
        + "00000005"
        + "00000001"
        + "00" * 15
        + "01"
        + "00" * 16
        + "00000004"
        + "0000000000000064"
        + "01"
        + "00"
        + "00"
        + "00"
    )
    assert data.hex() == expected
    json_form, again = kafka_oracle.decode("VoteRequest", 2, data)
    assert json_form == VOTE_V2
    assert again == data


def test_oracle_answers_bad_input(kafka_oracle: KafkaOracle) -> None:
    with pytest.raises(OracleError, match="leftover"):
        kafka_oracle.decode("SnapshotFooterRecord", 0, bytes.fromhex("0000" + "00" + "ff"))
    with pytest.raises(OracleError):
        kafka_oracle.decode("VoteRequest", 0, b"\x00")
    with pytest.raises(OracleError, match="unknown message"):
        kafka_oracle.encode("NoSuchMessage", 0, {})
    # A partial batch is not an error to Kafka: it is left out of validBytes.
    partial = kafka_oracle.records_read(b"\x00\x01")
    assert (partial["batches"], partial["validBytes"], partial["sizeInBytes"]) == ([], 0, 2)
    # A batch whose length field is below the v2 header size is corrupt.
    with pytest.raises(OracleError, match="CorruptRecord"):
        kafka_oracle.records_read(bytes(8) + (5).to_bytes(4, "big") + bytes(5))
    reply = kafka_oracle.request({"op": "no_such_op"})
    assert reply["ok"] is False
    assert kafka_oracle.ping()


def test_oracle_batch_keeps_order(kafka_oracle: KafkaOracle) -> None:
    reqs = [
        {"op": "encode", "message": "SnapshotFooterRecord", "version": 0, "json": {"version": i}}
        for i in range(1000)
    ]
    replies = kafka_oracle.batch(reqs, chunk=128)
    assert [r["hex"] for r in replies] == [f"{i:04x}00" for i in range(1000)]

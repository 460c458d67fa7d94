"""Records conformance: RecordBatch v2 and control records, ours against Kafka's MemoryRecords.

Kafka validates the CRC of and reads the batches we build (data and control batches), and we read
the batches Kafka builds (MemoryRecordsBuilder, KRaft's BatchBuilder, the control-record appenders
KRaft uses). The first tests check the oracle itself with Kafka on both ends.
"""

from __future__ import annotations

import base64

import pytest

from tests.conformance.oracle_client import KafkaOracle

pytestmark = pytest.mark.conformance


def test_oracle_records_round_trip_inside_kafka(kafka_oracle: KafkaOracle) -> None:
    records = [(None, b"hello"), (b"k", None), (b"", b"\x00" * 300)]
    data = kafka_oracle.records_build(
        base_offset=5, epoch=3, timestamp=1_700_000_000_000, records=records
    )
    # Header fields at the offsets of reference §3.1.
    assert int.from_bytes(data[0:8], "big") == 5
    assert int.from_bytes(data[8:12], "big") == len(data) - 12
    assert int.from_bytes(data[12:16], "big") == 3
    assert data[16] == 2
    (batch,) = kafka_oracle.records_read(data)["batches"]
    assert batch["crcValid"] is True
    assert (batch["baseOffset"], batch["lastOffset"], batch["count"]) == (5, 7, 3)
    got = [(r["key"], r["value"], r["offset"]) for r in batch["records"]]
    enc = [
        (
            None if k is None else base64.b64encode(k).decode(),
            None if v is None else base64.b64encode(v).decode(),
        )
        for k, v in records
    ]
    assert got == [(k, v, 5 + i) for i, (k, v) in enumerate(enc)]
    corrupt = bytearray(data)
    corrupt[-2] ^= 0xFF  # a byte of the last value: the structure still parses
    (bad,) = kafka_oracle.records_read(bytes(corrupt))["batches"]
    assert bad["crcValid"] is False


def test_oracle_control_batch_round_trip_inside_kafka(kafka_oracle: KafkaOracle) -> None:
    leader_change = {
        "version": 0,
        "leaderId": 1,
        "voters": [{"voterId": 1}, {"voterId": 2}],
        "grantingVoters": [{"voterId": 1}],
    }
    data = kafka_oracle.records_build(
        base_offset=0,
        epoch=1,
        timestamp=7,
        control=[
            ("LeaderChange", leader_change),
            ("KRaftVersion", {"version": 0, "kRaftVersion": 1}),
        ],
    )
    (batch,) = kafka_oracle.records_read(data)["batches"]
    assert batch["isControl"] is True
    assert batch["crcValid"] is True
    types = [r["control"]["type"] for r in batch["records"]]
    assert types == ["LEADER_CHANGE", "KRAFT_VERSION"]
    assert batch["records"][0]["control"]["json"] == leader_change
    assert batch["records"][1]["control"]["json"] == {"version": 0, "kRaftVersion": 1}


def test_oracle_raft_batch_builder_writes_null_keys(kafka_oracle: KafkaOracle) -> None:
    data = kafka_oracle.records_build(
        base_offset=10, epoch=2, timestamp=99, records=[(None, b"a"), (None, b"bc")], mode="raft"
    )
    (batch,) = kafka_oracle.records_read(data)["batches"]
    assert batch["crcValid"] is True
    assert [(r["offset"], r["key"], r["value"]) for r in batch["records"]] == [
        (10, None, "YQ=="),
        (11, None, "YmM="),
    ]

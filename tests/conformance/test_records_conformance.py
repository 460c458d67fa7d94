"""Records conformance: RecordBatch v2 and control records, ours against Kafka's MemoryRecords.

Kafka validates the CRC of and reads the batches we build (data and control batches), and we read
the batches Kafka builds (MemoryRecordsBuilder, KRaft's BatchBuilder, the control-record appenders
KRaft uses). The first tests check the oracle itself with Kafka on both ends.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metaquorum.protocol import json_form
from metaquorum.protocol.control_records import (
    CONTROL_VALUE_VERSION,
    DUMP_NAMES,
    build_control_batch,
    control_record_type_of,
    control_records_of,
    leader_change_batch,
    snapshot_footer_batch,
    snapshot_header_batch,
)
from metaquorum.protocol.control_types import ControlMessage, ControlRecordType
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import (
    KRaftVersionRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
)
from metaquorum.protocol.records import (
    CompressionType,
    Header,
    RecordBatch,
    SimpleRecord,
    build_batch,
    iter_batches,
)

from tests.conformance.oracle_client import Json, KafkaOracle
from tests.support.message_strategies import strategy_for

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


# --- data batches: ours read by Kafka, Kafka's read by ours, same bytes ---------------------

MAX_TS = 1 << 50
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
BLOB = st.none() | st.binary(max_size=300)
HEADERS = st.lists(st.builds(Header, st.text(max_size=20), BLOB), max_size=3).map(tuple)
RECORD = st.builds(
    SimpleRecord,
    value=BLOB,
    key=BLOB,
    headers=HEADERS,
    timestamp_ms=st.none() | st.integers(0, MAX_TS),
)
BATCH = st.fixed_dictionaries(
    {
        "base_offset": st.integers(0, (1 << 62)),
        "epoch": INT32,
        "timestamp": st.integers(0, MAX_TS),
        "records": st.lists(RECORD, min_size=1, max_size=12),
    }
)
RAFT_BATCH = st.fixed_dictionaries(
    {
        "base_offset": st.integers(0, (1 << 62)),
        "epoch": st.integers(0, (1 << 31) - 1),
        "timestamp": st.integers(0, MAX_TS),
        "values": st.lists(st.binary(max_size=300), min_size=1, max_size=12),
    }
)
EXAMPLES = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _kafka_records(batch: Json) -> list[tuple[Any, ...]]:
    return [
        (
            r["offset"],
            r["timestamp"],
            r["key"],
            r["value"],
            tuple((h["key"], h["value"]) for h in r["headers"]),
        )
        for r in batch["records"]
    ]


def _our_records(batch: RecordBatch) -> list[tuple[Any, ...]]:
    return [
        (
            r.offset,
            r.timestamp,
            _b64(r.key),
            _b64(r.value),
            tuple((h.key, _b64(h.value)) for h in r.headers),
        )
        for r in batch
    ]


def _kafka_build(oracle: KafkaOracle, case: Json) -> bytes:
    """Kafka's MemoryRecordsBuilder on the same records (CreateTime, no producer state)."""
    recs = []
    for r in case["records"]:
        rec: Json = {
            "key": _b64(r.key),
            "value": _b64(r.value),
            "headers": [{"key": h.key, "value": _b64(h.value)} for h in r.headers],
        }
        if r.timestamp_ms is not None:
            rec["timestamp"] = r.timestamp_ms
        recs.append(rec)
    reply = oracle.call(
        "records_build",
        baseOffset=case["base_offset"],
        epoch=case["epoch"],
        timestamp=case["timestamp"],
        records=recs,
    )
    return bytes.fromhex(reply["hex"])


def _check_header_facts(kafka: Json, ours: RecordBatch, *, control: bool) -> None:
    assert kafka["crcValid"] is True, kafka.get("invalidReason")
    assert "recordsError" not in kafka, kafka.get("recordsError")
    assert ours.is_valid()
    assert kafka["magic"] == 2
    assert kafka["baseOffset"] == ours.base_offset
    assert kafka["lastOffset"] == ours.last_offset
    assert kafka["partitionLeaderEpoch"] == ours.partition_leader_epoch
    assert kafka["checksum"] == ours.crc
    assert kafka["isControl"] is control is ours.is_control
    assert kafka["isTransactional"] is False is ours.is_transactional
    assert kafka["compression"] == "none"
    assert kafka["timestampType"] == "CreateTime"
    assert kafka["baseTimestamp"] == ours.base_timestamp
    assert kafka["maxTimestamp"] == ours.max_timestamp
    assert (kafka["producerId"], kafka["producerEpoch"], kafka["baseSequence"]) == (-1, -1, -1)
    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence) == (-1, -1, -1)
    assert kafka["count"] == ours.records_count
    assert kafka["sizeInBytes"] == ours.size_in_bytes


@EXAMPLES
@given(case=BATCH)
def test_kafka_reads_our_data_batches(kafka_oracle: KafkaOracle, case: Json) -> None:
    ours = build_batch(
        case["base_offset"], case["epoch"], case["records"], timestamp_ms=case["timestamp"]
    )
    read = kafka_oracle.records_read(ours)
    assert read["validBytes"] == len(ours)
    (kafka,) = read["batches"]
    (batch,) = iter_batches(ours)
    _check_header_facts(kafka, batch, control=False)
    assert _kafka_records(kafka) == _our_records(batch)
    expected = [
        (
            case["base_offset"] + i,
            case["timestamp"] if r.timestamp_ms is None else r.timestamp_ms,
            _b64(r.key),
            _b64(r.value),
            tuple((h.key, _b64(h.value)) for h in r.headers),
        )
        for i, r in enumerate(case["records"])
    ]
    assert _kafka_records(kafka) == expected
    # MemoryRecordsBuilder given the same records writes the same bytes.
    assert _kafka_build(kafka_oracle, case).hex() == ours.hex()


@EXAMPLES
@given(case=BATCH)
def test_we_read_kafka_data_batches(kafka_oracle: KafkaOracle, case: Json) -> None:
    theirs = _kafka_build(kafka_oracle, case)
    (kafka,) = kafka_oracle.records_read(theirs)["batches"]
    (batch,) = iter_batches(theirs)
    batch.ensure_valid()
    _check_header_facts(kafka, batch, control=False)
    assert _our_records(batch) == _kafka_records(kafka)


@EXAMPLES
@given(case=RAFT_BATCH)
def test_raft_batch_builder_bytes_equal_ours(kafka_oracle: KafkaOracle, case: Json) -> None:
    """KRaft's own BatchBuilder (null keys, append time on every record) writes our bytes."""
    theirs = kafka_oracle.records_build(
        base_offset=case["base_offset"],
        epoch=case["epoch"],
        timestamp=case["timestamp"],
        records=[(None, v) for v in case["values"]],
        mode="raft",
    )
    ours = build_batch(
        case["base_offset"], case["epoch"], case["values"], timestamp_ms=case["timestamp"]
    )
    assert ours.hex() == theirs.hex()
    (batch,) = iter_batches(theirs)
    assert [r.value for r in batch] == case["values"]
    assert all(r.key is None and r.timestamp == case["timestamp"] for r in batch)


@EXAMPLES
@given(cases=st.lists(BATCH, min_size=2, max_size=5), corrupt=st.data())
def test_many_batches_and_a_corrupt_one(
    kafka_oracle: KafkaOracle, cases: list[Json], corrupt: st.DataObject
) -> None:
    """A buffer of several batches (ours): Kafka and we agree on every batch, and on which
    batch a flipped byte inside the CRC-covered range makes invalid."""
    parts = [
        build_batch(c["base_offset"], c["epoch"], c["records"], timestamp_ms=c["timestamp"])
        for c in cases
    ]
    victim = corrupt.draw(st.integers(0, len(parts) - 1), label="victim")
    # Flip a byte of MaxTimestamp (bytes 35..42): the CRC covers it, and every length field
    # stays intact, so both sides still parse the records of the corrupt batch.
    pos = corrupt.draw(st.integers(35, 42), label="pos")
    bad = bytearray(parts[victim])
    bad[pos] ^= 0xFF
    parts[victim] = bytes(bad)
    buf = b"".join(parts)
    read = kafka_oracle.records_read(buf)
    ours = list(iter_batches(buf))
    assert len(read["batches"]) == len(ours) == len(parts)
    for i, (k, o) in enumerate(zip(read["batches"], ours, strict=True)):
        assert k["crcValid"] is o.is_valid() is (i != victim)
        assert k["baseOffset"] == o.base_offset
        assert k["maxTimestamp"] == o.max_timestamp
        assert _kafka_records(k) == _our_records(o)


# --- control batches -----------------------------------------------------------------------

CONTROL_MESSAGES = {
    ControlRecordType.LEADER_CHANGE: "LeaderChangeMessage",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    ControlRecordType.KRAFT_VERSION: "KRaftVersionRecord",
    ControlRecordType.KRAFT_VOTERS: "VotersRecord",
}
# Control record values are written at version 0; JSON cannot carry unknown tagged fields, so
# values compared through Kafka's JSON have none.
CONTROL_MESSAGE = st.one_of(
    [strategy_for(name, 0, unknown_tags=False) for name in CONTROL_MESSAGES.values()]
)
CONTROL_BATCH = st.fixed_dictionaries(
    {
        "base_offset": st.integers(0, (1 << 62)),
        "epoch": st.integers(0, (1 << 31) - 1),
        "timestamp": st.integers(0, MAX_TS),
        "messages": st.lists(CONTROL_MESSAGE, min_size=1, max_size=4),
    }
)


def _control_spec(messages: list[ControlMessage]) -> list[tuple[str, Json]]:
    return [
        (DUMP_NAMES[control_record_type_of(m)], json_form.to_json(m, CONTROL_VALUE_VERSION))
        for m in messages
    ]


@EXAMPLES
@given(case=CONTROL_BATCH)
def test_kafka_reads_our_control_batches(kafka_oracle: KafkaOracle, case: Json) -> None:
    ours = build_control_batch(
        case["base_offset"], case["epoch"], case["messages"], timestamp_ms=case["timestamp"]
    )
    (kafka,) = kafka_oracle.records_read(ours)["batches"]
    (batch,) = iter_batches(ours)
    _check_header_facts(kafka, batch, control=True)
    assert len(kafka["records"]) == len(case["messages"])
    for i, (rec, msg) in enumerate(zip(kafka["records"], case["messages"], strict=True)):
        rtype = control_record_type_of(msg)
        assert rec["offset"] == case["base_offset"] + i
        assert rec["timestamp"] == case["timestamp"]
        assert rec["control"]["typeId"] == int(rtype)
        assert rec["control"]["type"] == rtype.name
        assert rec["control"]["message"] == CONTROL_MESSAGES[rtype]
        assert rec["control"]["json"] == json_form.to_json(msg, CONTROL_VALUE_VERSION)
    # MemoryRecordsBuilder with the append<Type>Message calls KRaft uses writes our bytes.
    theirs = kafka_oracle.records_build(
        base_offset=case["base_offset"],
        epoch=case["epoch"],
        timestamp=case["timestamp"],
        control=_control_spec(case["messages"]),
    )
    assert theirs.hex() == ours.hex()


@EXAMPLES
@given(case=CONTROL_BATCH)
def test_we_read_kafka_control_batches(kafka_oracle: KafkaOracle, case: Json) -> None:
    theirs = kafka_oracle.records_build(
        base_offset=case["base_offset"],
        epoch=case["epoch"],
        timestamp=case["timestamp"],
        control=_control_spec(case["messages"]),
    )
    (batch,) = iter_batches(theirs)
    batch.ensure_valid()
    assert batch.is_control
    assert (batch.base_offset, batch.partition_leader_epoch) == (case["base_offset"], case["epoch"])
    got = control_records_of(batch)
    assert got == [(control_record_type_of(m), m) for m in case["messages"]]


@EXAMPLES
@given(
    msg=CONTROL_MESSAGE,
    base_offset=st.integers(0, 1 << 62),
    epoch=st.integers(0, (1 << 31) - 1),
    timestamp=st.integers(0, MAX_TS),
)
def test_single_control_record_helpers(
    kafka_oracle: KafkaOracle, msg: ControlMessage, base_offset: int, epoch: int, timestamp: int
) -> None:
    """MemoryRecords.withLeaderChangeMessage & co. write the same bytes as our one-record batch."""
    theirs = kafka_oracle.records_build(
        base_offset=base_offset,
        epoch=epoch,
        timestamp=timestamp,
        control=_control_spec([msg]),
        helper=True,
    )
    ours = build_control_batch(base_offset, epoch, [msg], timestamp_ms=timestamp)
    assert theirs.hex() == ours.hex()


@EXAMPLES
@given(
    epoch=st.integers(0, (1 << 31) - 1),
    timestamp=st.integers(0, MAX_TS),
    last_contained=st.integers(0, MAX_TS),
    voters=strategy_for("VotersRecord", 0, unknown_tags=False),
    leader_change=strategy_for("LeaderChangeMessage", 0, unknown_tags=False),
    kraft_version=st.sampled_from([0, 1]),
    end_offset=st.integers(1, 1 << 40),
)
def test_kraft_batch_shapes(
    kafka_oracle: KafkaOracle,
    epoch: int,
    timestamp: int,
    last_contained: int,
    voters: Any,
    leader_change: Any,
    kraft_version: int,
    end_offset: int,
) -> None:
    """Our start-of-epoch, snapshot-header and snapshot-footer batches equal what Kafka builds
    from the same records (reference §3.3, §3.4), and Kafka reads them back to the same values."""
    kv = KRaftVersionRecord(version=0, kraft_version=kraft_version)
    header = SnapshotHeaderRecord(version=0, last_contained_log_timestamp=last_contained)
    cases: list[tuple[bytes, list[Any], int]] = [
        (
            leader_change_batch(
                end_offset,
                epoch,
                leader_change,
                timestamp_ms=timestamp,
                kraft_version=kv,
                voters=voters,
            ),
            [leader_change, kv, voters],
            end_offset,
        ),
        (
            snapshot_header_batch(
                epoch,
                last_contained,
                timestamp_ms=timestamp,
                kraft_version=kraft_version,
                voters=voters,
            ),
            [header, kv, voters] if kraft_version >= 1 else [header],
            0,
        ),
        (
            snapshot_footer_batch(end_offset, epoch, timestamp_ms=timestamp),
            [SnapshotFooterRecord(version=0)],
            end_offset,
        ),
    ]
    for ours, messages, base in cases:
        theirs = kafka_oracle.records_build(
            base_offset=base, epoch=epoch, timestamp=timestamp, control=_control_spec(messages)
        )
        assert ours.hex() == theirs.hex(), [type(m).__name__ for m in messages]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=BATCH, codec=st.sampled_from(["gzip", "snappy", "lz4", "zstd"]))
def test_compressed_kafka_batches_are_refused_cleanly(
    kafka_oracle: KafkaOracle, case: Json, codec: str
) -> None:
    """KRaft never compresses, and we read only uncompressed batches: a batch Kafka compressed
    still parses at the header level (offsets, epoch, CRC, codec id) and its records raise
    ProtocolError, never another exception."""
    data = bytes.fromhex(
        kafka_oracle.call(
            "records_build",
            baseOffset=case["base_offset"],
            epoch=case["epoch"],
            timestamp=case["timestamp"],
            compression=codec,
            records=[{"key": _b64(r.key), "value": _b64(r.value)} for r in case["records"]],
        )["hex"]
    )
    (kafka,) = kafka_oracle.records_read(data)["batches"]
    (batch,) = iter_batches(data)
    assert kafka["compression"] == codec
    assert batch.compression_type == CompressionType[codec.upper()]
    assert batch.is_valid() and kafka["crcValid"]
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (
        kafka["baseOffset"],
        kafka["lastOffset"],
        kafka["count"],
    )
    with pytest.raises(ProtocolError, match="compressed"):
        list(batch)

"""Control records: key layout, values at v0 (hand-computed bytes), control batches."""

from __future__ import annotations

import struct

import pytest
from metaquorum.protocol.control_records import (
    build_control_batch,
    control_record,
    control_records_of,
    decode_control_record,
    leader_change_batch,
    parse_control_record_type,
    snapshot_footer_batch,
    snapshot_header_batch,
)
from metaquorum.protocol.control_types import ControlRecordType
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from metaquorum.protocol.records import Record, iter_valid_batches
from metaquorum.protocol.types import Uuid


def test_type_ids_are_kafkas() -> None:
    assert [t.value for t in ControlRecordType] == [-1, 0, 1, 2, 3, 4, 5, 6]


def test_key_and_value_bytes_by_hand() -> None:
    rec = control_record(SnapshotHeaderRecord(version=0, last_contained_log_timestamp=258))
    assert rec.key == bytes([0, 0, 0, 3])
    # flexible v0: Version int16, LastContainedLogTimestamp int64, empty tagged section
    assert rec.value == struct.pack(">hq", 0, 258) + b"\x00"
    assert control_record(SnapshotFooterRecord()).value == b"\x00\x00\x00"
    assert control_record(KRaftVersionRecord(version=0, kraft_version=1)).value == (
        b"\x00\x00\x00\x01\x00"
    )
    lc = LeaderChangeMessage(
        version=0,
        leader_id=2,
        voters=[LeaderChangeMessage.Voter(voter_id=1), LeaderChangeMessage.Voter(voter_id=2)],
        granting_voters=[LeaderChangeMessage.Voter(voter_id=2)],
    )
    # Version, LeaderId, compact array (N+1) of {VoterId, tags}, same for GrantingVoters, tags
    assert control_record(lc).value == (
        struct.pack(">hi", 0, 2)
        + b"\x03" + struct.pack(">i", 1) + b"\x00" + struct.pack(">i", 2) + b"\x00"
        + b"\x02" + struct.pack(">i", 2) + b"\x00"
        + b"\x00"
    )  # fmt: skip


def test_parse_key() -> None:
    assert parse_control_record_type(b"\x00\x00\x00\x02") == ControlRecordType.LEADER_CHANGE
    assert parse_control_record_type(b"\x00\x00\x00\x63") == ControlRecordType.UNKNOWN
    for bad in (None, b"\x00", b"\xff\xff\x00\x02"):
        with pytest.raises(ProtocolError):
            parse_control_record_type(bad)


def _voters() -> VotersRecord:
    return VotersRecord(
        version=0,
        voters=[
            VotersRecord.Voter(
                voter_id=1,
                voter_directory_id=Uuid.from_string("J8aAPcfLQt2bqs1JT_rMgQ"),
                endpoints=[VotersRecord.Endpoint(name="CONTROLLER", host="localhost", port=9093)],
                kraft_version_feature=VotersRecord.KRaftVersionFeature(
                    min_supported_version=0, max_supported_version=1
                ),
            )
        ],
    )


def test_leader_change_batch_round_trip() -> None:
    lc = LeaderChangeMessage(version=0, leader_id=1, voters=[LeaderChangeMessage.Voter(voter_id=1)])
    data = leader_change_batch(
        7,
        3,
        lc,
        timestamp_ms=99,
        kraft_version=KRaftVersionRecord(kraft_version=1),
        voters=_voters(),
    )
    [batch] = iter_valid_batches(data)
    assert batch.is_control and (batch.base_offset, batch.last_offset) == (7, 9)
    assert batch.partition_leader_epoch == 3 and batch.producer_id == -1
    decoded = control_records_of(batch)
    assert [t for t, _ in decoded] == [
        ControlRecordType.LEADER_CHANGE,
        ControlRecordType.KRAFT_VERSION,
        ControlRecordType.KRAFT_VOTERS,
    ]
    assert decoded[0][1] == lc and decoded[2][1] == _voters()
    assert all(r.timestamp == 99 for r in batch)


def test_snapshot_framing_batches() -> None:
    head = snapshot_header_batch(5, 1234, timestamp_ms=1, kraft_version=1, voters=_voters())
    [hb] = iter_valid_batches(head)
    assert hb.base_offset == 0 and hb.records_count == 3 and hb.partition_leader_epoch == 5
    kinds = [t for t, _ in control_records_of(hb)]
    assert kinds[0] == ControlRecordType.SNAPSHOT_HEADER
    plain = snapshot_header_batch(5, 1234, timestamp_ms=1)
    assert next(iter_valid_batches(plain)).records_count == 1
    [fb] = iter_valid_batches(snapshot_footer_batch(3, 5, timestamp_ms=1))
    assert control_records_of(fb) == [(ControlRecordType.SNAPSHOT_FOOTER, SnapshotFooterRecord())]


def test_bad_values_raise_protocol_error() -> None:
    key = b"\x00\x00\x00\x03"
    for value in (None, b"", b"\x00\x00\x00"):
        with pytest.raises(ProtocolError):
            decode_control_record(Record(0, 0, key, value, ()))
    data = build_control_batch(0, 1, [SnapshotFooterRecord()], timestamp_ms=0)
    assert next(iter_valid_batches(data)).is_control

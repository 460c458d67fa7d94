"""The key-value state machine: last write wins, empty value deletes, snapshot round trip in
Kafka's snapshot file layout (header, data batches, footer; our control-record codec is
conformance-tested against Kafka)."""

from __future__ import annotations

from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.listener import Batch
from metaquorum.core.log import Snapshot
from metaquorum.protocol.control_records import control_records_of
from metaquorum.protocol.control_types import ControlRecordType
from metaquorum.protocol.records import iter_batches
from metaquorum.runtime.state_machine import KeyValueStateMachine


def test_last_write_wins_and_empty_value_deletes() -> None:
    sm = KeyValueStateMachine()
    sm.handle_commit(Batch(0, 1, (b"1,2",), control=True))
    sm.handle_commit(Batch(1, 1, (b"a=1", b"b=2", b"a=3", b"plain", b"b=")))
    assert sm.data == {b"a": b"3"}
    assert sm.applied_offset == 6 and sm.records_applied == 5
    assert sm.bytes_since_snapshot == sum(len(v) for v in (b"a=1", b"b=2", b"a=3", b"plain", b"b="))


def test_snapshot_payload_round_trips_in_kafka_layout() -> None:
    sm = KeyValueStateMachine()
    sm.handle_commit(Batch(0, 2, tuple(b"k%d=v%d" % (i, i) for i in range(2500))))
    payload = sm.snapshot_payload(2, 1_700_000_000_000)
    batches = list(iter_batches(payload, allow_partial_tail=False))
    assert batches[0].is_control and batches[-1].is_control
    assert control_records_of(batches[0])[0][0] == ControlRecordType.SNAPSHOT_HEADER
    assert control_records_of(batches[-1])[0][0] == ControlRecordType.SNAPSHOT_FOOTER
    offsets = [r.offset for b in batches for r in b]
    assert offsets == list(range(len(offsets)))  # dense from 0, as Kafka's snapshot writer
    other = KeyValueStateMachine()
    other.handle_load_snapshot(Snapshot(OffsetAndEpoch(2, 2500), payload))
    assert other.data == sm.data and other.applied_offset == 2500
    assert other.digest() == sm.digest()

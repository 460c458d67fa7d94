"""LogEntry <-> RecordBatch bytes: what a follower reads is what the leader wrote; Kafka's own
batch reader (our records codec, conformance-tested against Kafka) sees LeaderChange records."""

from __future__ import annotations

from metaquorum.core.leader_change import LeaderChangeValue
from metaquorum.core.log import EntryKind, LogEntry
from metaquorum.protocol.control_records import ControlRecordType, control_records_of
from metaquorum.protocol.records import iter_batches
from metaquorum.runtime.records_bridge import (
    batches_for_entries,
    clip_batches,
    entries_from_records,
)

ENTRIES = [
    LogEntry(0, 1, LeaderChangeValue.of(2, [1, 2, 3], [2, 3]).encode(), EntryKind.LEADER_CHANGE),
    LogEntry(1, 1, b"a"),
    LogEntry(2, 1, b"bb"),
    LogEntry(3, 2, LeaderChangeValue.of(1, [1, 2, 3], [1]).encode(), EntryKind.LEADER_CHANGE),
    LogEntry(4, 2, b""),
    LogEntry(5, 2, b"c" * 300),
]


def test_round_trip_and_batch_layout() -> None:
    data = b"".join(batches_for_entries(ENTRIES, timestamp_ms=5))
    assert entries_from_records(data, 0) == tuple(ENTRIES)
    batches = list(iter_batches(data))
    assert [(b.base_offset, b.last_offset, b.is_control) for b in batches] == [
        (0, 0, True),
        (1, 2, False),
        (3, 3, True),
        (4, 5, False),
    ]
    (rtype, lc) = control_records_of(batches[0])[0]
    assert rtype == ControlRecordType.LEADER_CHANGE
    assert lc is not None and lc.leader_id == 2  # type: ignore[union-attr]
    assert [v.voter_id for v in lc.voters] == [1, 2, 3]  # type: ignore[union-attr]
    assert [v.voter_id for v in lc.granting_voters] == [2, 3]  # type: ignore[union-attr]
    (_, lc2) = control_records_of(batches[2])[0]
    assert lc2 is not None and lc2.leader_id == 1  # type: ignore[union-attr]
    assert [v.voter_id for v in lc2.voters] == [1, 2, 3]  # type: ignore[union-attr]
    assert [v.voter_id for v in lc2.granting_voters] == [1]  # type: ignore[union-attr]


def test_legacy_leader_change_value_takes_the_leader_from_the_caller() -> None:
    data = b"".join(
        batches_for_entries(
            [LogEntry(0, 1, b"2,3", EntryKind.LEADER_CHANGE)], leader_id=2, timestamp_ms=5
        )
    )
    (_, lc) = control_records_of(next(iter(iter_batches(data))))[0]
    assert lc is not None and lc.leader_id == 2  # type: ignore[union-attr]
    assert [v.voter_id for v in lc.granting_voters] == [2, 3]  # type: ignore[union-attr]


def test_from_offset_and_clip() -> None:
    data = b"".join(batches_for_entries(ENTRIES, timestamp_ms=5))
    assert entries_from_records(data, 3) == tuple(ENTRIES[3:])
    clipped = clip_batches(data, 1, 4)
    assert [b.base_offset for b in iter_batches(clipped)] == [1, 3]
    assert clip_batches(data, 6, 10) == b""
    # a partial last batch (size-capped fetch) is ignored
    assert entries_from_records(data[:-10], 0) == tuple(ENTRIES[:4])

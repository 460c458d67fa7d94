"""LogEntry <-> RecordBatch bytes: what a follower reads is what the leader wrote; every control
record type reaches the core typed and re-encodes to the same record (issue 13: before, any
control record but LeaderChange became an empty LeaderChange and was lost on re-encoding)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.core.log import EntryKind, LogEntry, leader_change_message
from metaquorum.protocol.control_records import (
    control_records_of,
    leader_change_batch,
    snapshot_footer_batch,
)
from metaquorum.protocol.control_types import ControlRecordType
from metaquorum.protocol.messages import (
    KRaftVersionRecord,
    SnapshotFooterRecord,
    VotersRecord,
)
from metaquorum.protocol.records import iter_batches
from metaquorum.protocol.types import Uuid
from metaquorum.runtime.records_bridge import (
    batches_for_entries,
    clip_batches,
    entries_from_records,
)

_lc = leader_change_message


def _voters(ids: list[int]) -> VotersRecord:
    return VotersRecord(
        version=0,
        voters=[
            VotersRecord.Voter(
                voter_id=i,
                voter_directory_id=Uuid(i, i),
                endpoints=[VotersRecord.Endpoint(name="CONTROLLER", host=f"h{i}", port=9000 + i)],
                kraft_version_feature=VotersRecord.KRaftVersionFeature(
                    min_supported_version=0, max_supported_version=1
                ),
            )
            for i in ids
        ],
    )


ENTRIES = [
    LogEntry.of_control(0, 1, _lc(2, [1, 2, 3], [2, 3])),
    LogEntry(1, 1, b"a"),
    LogEntry(2, 1, b"bb"),
    LogEntry.of_control(3, 2, _lc(1, [1, 2, 3], [1])),
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
    assert rtype == ControlRecordType.LEADER_CHANGE and lc == _lc(2, [1, 2, 3], [2, 3])


def test_kraft_version_and_voters_survive_the_core() -> None:
    """Kafka's start-of-epoch batch of a kraft.version 1 quorum (LeaderChange + KRaftVersion +
    Voters) and a snapshot footer: typed entries, and the very same bytes re-encoded."""
    kafka = leader_change_batch(
        0, 3, _lc(1, [1, 2, 3], [1, 2]), timestamp_ms=77,
        kraft_version=KRaftVersionRecord(version=0, kraft_version=1), voters=_voters([1, 2, 3]),
    ) + snapshot_footer_batch(3, 3, timestamp_ms=77)  # fmt: skip
    entries = entries_from_records(kafka, 0)
    assert [e.kind for e in entries] == [
        EntryKind.LEADER_CHANGE,
        EntryKind.KRAFT_VERSION,
        EntryKind.KRAFT_VOTERS,
        EntryKind.SNAPSHOT_FOOTER,
    ]
    assert entries[2].control == _voters([1, 2, 3])
    assert isinstance(entries[3].control, SnapshotFooterRecord)
    # The footer is a batch of its own in the bytes; re-encoding groups by epoch, so compare
    # the first batch alone and then the whole records field record by record.
    assert (
        b"".join(batches_for_entries(entries[:3], timestamp_ms=77))
        == kafka[: len(kafka) - len(snapshot_footer_batch(3, 3, timestamp_ms=77))]
    )
    again = entries_from_records(b"".join(batches_for_entries(entries, timestamp_ms=77)), 0)
    assert again == entries


def test_unknown_control_type_is_kept_not_re_encoded() -> None:
    entry = LogEntry(0, 1, b"\x00", EntryKind.UNKNOWN_CONTROL)
    try:
        batches_for_entries([entry], timestamp_ms=1)
    except ValueError as e:
        assert "unknown control record" in str(e)
    else:
        raise AssertionError("an unknown control record was re-encoded")


def test_from_offset_and_clip() -> None:
    data = b"".join(batches_for_entries(ENTRIES, timestamp_ms=5))
    assert entries_from_records(data, 3) == tuple(ENTRIES[3:])
    clipped = clip_batches(data, 1, 4)
    assert [b.base_offset for b in iter_batches(clipped)] == [1, 3]
    assert clip_batches(data, 6, 10) == b""
    # a partial last batch (size-capped fetch) is ignored
    assert entries_from_records(data[:-10], 0) == tuple(ENTRIES[:4])


_CONTROL = st.one_of(
    st.builds(_lc, st.integers(0, 9), st.lists(st.integers(0, 9), max_size=3),
              st.lists(st.integers(0, 9), max_size=3)),
    st.builds(KRaftVersionRecord, version=st.just(0), kraft_version=st.integers(0, 1)),
    st.builds(_voters, st.lists(st.integers(0, 9), max_size=3)),
    st.just(SnapshotFooterRecord(version=0)),
)  # fmt: skip
_RUN = st.tuples(st.booleans(), st.integers(1, 4))  # (control?, length)


@settings(max_examples=150, deadline=None)
@given(runs=st.lists(_RUN, min_size=1, max_size=6), data=st.data())
def test_mixed_batches_round_trip_through_load_core_and_re_encode(
    runs: list[tuple[bool, int]], data: st.DataObject
) -> None:
    """Property (issue 13): mixed data/control batches -> entries (what storage load and Fetch
    hand the core) -> re-encoded -> the same entries, and the same bytes on a second trip."""
    entries: list[LogEntry] = []
    epoch = 1
    for control, length in runs:
        epoch += data.draw(st.integers(0, 1))
        for _ in range(length):
            offset = len(entries)
            if control:
                entries.append(LogEntry.of_control(offset, epoch, data.draw(_CONTROL)))
            else:
                entries.append(LogEntry(offset, epoch, data.draw(st.binary(max_size=20))))
    first = b"".join(batches_for_entries(entries, timestamp_ms=9))
    loaded = entries_from_records(first, 0)
    assert loaded == tuple(entries)
    assert b"".join(batches_for_entries(loaded, timestamp_ms=9)) == first

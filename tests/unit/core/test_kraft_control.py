"""`KRaftControlRecordStateMachine` (KIP-853): the voter set and kraft.version by offset, fed by
appends, truncations and snapshots, checked against a model that recomputes both from scratch
(the newest record at or below each offset in the surviving log, else the snapshot's, else the
start-up value)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
from metaquorum.core.log import LogEntry, RaftLog, Snapshot
from metaquorum.core.voter_set import VoterSet
from metaquorum.protocol.control_records import snapshot_header_batch
from metaquorum.protocol.messages import KRaftVersionRecord, VotersRecord
from metaquorum.protocol.types import Uuid

START = VoterSet.of([1, 2, 3])


def _voters(ids: list[int]) -> VotersRecord:
    return VotersRecord(
        version=0,
        voters=[VotersRecord.Voter(voter_id=i, voter_directory_id=Uuid(0, i)) for i in ids],
    )


def _entry(offset: int, op: tuple[str, list[int] | int]) -> LogEntry:
    kind, arg = op
    if kind == "voters":
        assert isinstance(arg, list)
        return LogEntry.of_control(offset, 1, _voters(arg))
    if kind == "kraft":
        assert isinstance(arg, int)
        return LogEntry.of_control(offset, 1, KRaftVersionRecord(version=0, kraft_version=arg))
    return LogEntry(offset, 1, b"x")


def _snapshot(end: int, ids: list[int] | None, kraft: int) -> Snapshot:
    voters = _voters(ids) if ids is not None else None
    payload = snapshot_header_batch(1, 0, timestamp_ms=0, kraft_version=kraft, voters=voters)
    return Snapshot(OffsetAndEpoch(1, end), payload)


def test_changes_take_effect_on_append_and_revert_on_truncation() -> None:
    log = RaftLog([])
    sm = KRaftControlRecordStateMachine(START, 0)
    log.listeners.append(sm)
    log.append([_entry(0, ("data", 0)), _entry(1, ("kraft", 1)), _entry(2, ("voters", [1, 2]))])
    assert sm.latest_voters().sorted_ids() == [1, 2] and sm.latest_voters_offset() == 2
    assert sm.voters_at(1) == START and sm.kraft_version_at(0) == 0
    assert sm.latest_kraft_version() == 1
    log.truncate_to(2)  # the uncommitted change reverts
    assert sm.latest_voters() == START and sm.latest_voters_offset() == -1
    log.truncate_to(1)
    assert sm.latest_kraft_version() == 0


def test_installed_snapshot_replaces_the_history_and_created_one_keeps_it() -> None:
    log = RaftLog([])
    sm = KRaftControlRecordStateMachine(START, 0)
    log.listeners.append(sm)
    log.append([_entry(0, ("voters", [1, 2, 3, 4]))] + [_entry(i, ("data", 0)) for i in (1, 2)])
    log.create_snapshot(2, _snapshot(2, [1, 2, 3, 4], 1).payload)
    assert sm.latest_voters().sorted_ids() == [1, 2, 3, 4]  # created: history kept
    log.install_snapshot(_snapshot(10, [5, 6, 7], 1))
    assert sm.latest_voters().sorted_ids() == [5, 6, 7] and sm.latest_voters_offset() == 9
    assert sm.latest_kraft_version() == 1 and sm.voters_at(0).sorted_ids() == [5, 6, 7]
    log.install_snapshot(_snapshot(20, None, 0))  # kraft.version 0: back to the start-up set
    assert sm.latest_voters() == START and sm.latest_kraft_version() == 0


OPS = st.one_of(
    st.tuples(st.just("data"), st.just(0)),
    st.tuples(st.just("kraft"), st.integers(0, 1)),
    st.tuples(st.just("voters"), st.lists(st.integers(1, 6), min_size=1, max_size=4, unique=True)),
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(OPS, min_size=1, max_size=4)),
        st.tuples(st.just("truncate"), st.integers(0, 30)),
        st.tuples(
            st.just("install"),
            st.one_of(st.none(), st.lists(st.integers(1, 6), min_size=1, max_size=4, unique=True)),
        ),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(steps=STEPS)
def test_history_matches_a_model_recomputed_from_the_log(steps: list[tuple[str, object]]) -> None:
    log = RaftLog([])
    sm = KRaftControlRecordStateMachine(START, 0)
    log.listeners.append(sm)
    base_voters, base_kraft, base_at = START, 0, -1  # the start-up or the installed snapshot's
    for kind, arg in steps:
        if kind == "append":
            assert isinstance(arg, list)
            log.append([_entry(log.end_offset + i, op) for i, op in enumerate(arg)])
        elif kind == "truncate":
            assert isinstance(arg, int)
            log.truncate_to(max(arg, log.start_offset))
        else:
            ids = arg if isinstance(arg, list) else None
            end = log.end_offset + 1
            log.install_snapshot(_snapshot(end, ids, 1 if ids else 0))
            if ids:
                base_voters, base_kraft = VoterSet.from_voters_record(_voters(ids)), 1
                base_at = end - 1
            else:  # no records: back to the start-up values (Kafka clears its histories)
                base_voters, base_kraft, base_at = START, 0, -1
        for at in range(log.start_offset - 1, log.end_offset):
            voters, voters_offset, kraft = base_voters, base_at, base_kraft
            for e in log.entries():
                if e.offset > at:
                    break
                if isinstance(e.control, VotersRecord):
                    voters, voters_offset = VoterSet.from_voters_record(e.control), e.offset
                elif isinstance(e.control, KRaftVersionRecord):
                    kraft = e.control.kraft_version
            assert sm.voters_at(at) == voters, at
            assert sm.kraft_version_at(at) == kraft, at
            if at == log.end_offset - 1:
                assert sm.latest_voters() == voters and sm.latest_voters_offset() == voters_offset

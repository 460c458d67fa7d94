"""The operator nemesis's invariant checker (quorum_watch.check) fails on bad histories.

Synthetic observation sequences, no cluster: a healthy history passes; a minority of voters
caught up (not explained by the nemesis's own fault), a voter set changing by two members at
once, a second change before the first was seen committed, and a long leaderless stretch are
each reported. Also how a DescribeQuorum answer becomes a `Seen` (who counts as caught up).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import log_voters
import pytest
from quorum_watch import Fault, Seen, check, seen_from

pytestmark = pytest.mark.e2e

A, B, C, D, E = ((i, f"dir{i}") for i in range(5))
THREE = frozenset({A, B, C})


def s(t: float, voters: frozenset[tuple[int, str]] = THREE, **kw: object) -> Seen:
    args: dict[str, object] = {"leader": 0, "epoch": 1, "hw": 100, "leo": 100, "up": voters}
    args.update(kw)
    return Seen(t, voters=voters, **args)  # type: ignore[arg-type]


def healthy() -> list[Seen]:
    four = THREE | {D}
    return [
        s(0.0),
        s(0.1, up=frozenset({A, B})),  # one voter behind: still a majority
        s(0.2, four, leo=110, hw=105),  # add D: appended at <= 110
        s(0.3, four, leo=120, hw=112),  # committed (hw past 110)
        s(0.4, THREE, leo=130, hw=125),  # remove D
        s(0.5, leader=-1, error="election"),
        s(5.0, THREE, epoch=2, leo=140, hw=140),
    ]


def test_a_healthy_history_passes() -> None:
    assert check(healthy()) == []


def test_a_minority_caught_up_is_reported_unless_the_nemesis_took_those_voters_down() -> None:
    bad = [s(0.0), s(5.0, up=frozenset({A}))]
    (v,) = check(bad)
    assert "1 of 3 voters caught up" in v
    # one of the two down voters is the nemesis's: the other one is the operator's doing
    assert len(check(bad, [Fault(1, 4.0, 6.0)])) == 1
    # both down voters are the nemesis's (two faults at once): not the operator's
    assert check(bad, [Fault(1, 4.0, 6.0), Fault(2, 4.0, 6.0)]) == []
    # a fault window that ended before the observation excuses nothing
    assert len(check(bad, [Fault(1, 0.0, 4.5), Fault(2, 0.0, 4.5)])) == 1


def test_a_new_leader_is_not_judged_before_its_followers_could_fetch() -> None:
    new_epoch = [s(0.0), s(5.0, epoch=2, up=frozenset({A})), s(7.0, epoch=2, up=frozenset({A}))]
    assert check(new_epoch, epoch_grace_s=3.0) == []  # 2 s into epoch 2
    late = [*new_epoch, s(8.5, epoch=2, up=frozenset({A}))]
    (v,) = check(late, epoch_grace_s=3.0)
    assert v.startswith("t=8.5: 1 of 3 voters caught up")


def test_two_members_changed_at_once_is_reported() -> None:
    bad = [s(0.0), s(0.1, THREE | {D, E}, leo=120)]
    (v,) = check(bad)
    assert "changed by 2 members at once" in v


def test_a_jump_the_log_made_one_member_at_a_time_is_a_missed_answer_not_a_violation() -> None:
    """The campaign's seeds 50010-50019: a scale 5 -> 3 whose two removals committed 0.2 s
    apart, between two of the watcher's answers (it answered every 0.1-2.9 s under load)."""
    five = THREE | {D, E}
    seen = [s(0.0, five), s(0.3, THREE, leo=120, hw=120)]
    assert len(check(seen)) == 1  # the watcher alone cannot tell
    log = [THREE, THREE | {D}, five, THREE | {D}, THREE]  # 3 -> 5 -> 3, one member a record
    assert check(seen, log_sets=log) == []
    # the log itself jumped from five to three: still a violation
    assert len(check(seen, log_sets=[THREE, THREE | {D}, five, THREE])) == 1
    # a log that never held the set before the jump excuses nothing
    assert len(check(seen, log_sets=[THREE | {D}, THREE])) == 1


def test_the_logs_own_voter_records_are_judged_one_member_apart() -> None:
    four, five = THREE | {D}, THREE | {D, E}
    assert log_voters.jumps([(0, THREE), (10, four), (20, five), (30, four)]) == []
    (v,) = log_voters.jumps([(0, THREE), (10, five)])
    assert v.startswith("the log's VotersRecord at offset 10 changes 2 members at once")
    # merged by offset: replicas agree below the HW; a replica missing the older records
    # (a replaced voter's log starts later) adds nothing wrong
    assert log_voters.merged([[(0, THREE), (10, four)], [(10, four), (20, five)]]) == [
        (0, THREE),
        (10, four),
        (20, five),
    ]


def test_a_second_change_before_the_first_committed_is_reported() -> None:
    four = THREE | {D}
    five = four | {E}
    # four's record is at or past 100 (the LEO of the last answer without it): hw 100 when
    # five appears means it was not committed yet
    bad = [s(0.0), s(0.1, four, leo=110, hw=100), s(0.2, five, leo=120, hw=100)]
    (v,) = check(bad)
    assert "before the previous set" in v and "at or past offset 100; the hw is 100" in v
    ok = [s(0.0), s(0.1, four, leo=110, hw=100), s(0.15, four, hw=110), s(0.2, five, leo=120)]
    assert check(ok) == []
    # seen late (its first answer's LEO 110 is past the record, the client appending all
    # along) and committed in time (hw 105 > 100): no violation (the dev run of issue 33's
    # scale 5 -> 3 reported one before, with hw 3,619 as the bound)
    late = [s(0.0), s(0.1, four, leo=110, hw=104), s(0.2, five, leo=120, hw=105)]
    assert check(late) == []
    # a new epoch's leader may not know the HW yet: no verdict across epochs
    assert check([s(0.0), s(0.1, four, leo=110), s(0.2, five, epoch=2, leo=120, hw=0)]) == []


def test_a_long_leaderless_stretch_is_reported() -> None:
    bad = [s(0.0), *(s(t, leader=-1, error="no leader") for t in (1.0, 10.0, 21.0)), s(22.0)]
    (v,) = check(bad, leaderless_bound_s=20)
    assert "no leader for 21.0 s" in v
    assert check(bad, leaderless_bound_s=30) == []


def test_seen_from_counts_voters_caught_up_by_the_leaders_timestamps() -> None:
    def replica(i: int, leo: int, caught: int) -> SimpleNamespace:
        return SimpleNamespace(
            replica_id=i,
            directory_id=f"dir{i}",
            log_end_offset=leo,
            last_caught_up_timestamp=caught,
        )

    info = SimpleNamespace(
        leader_id=0,
        leader_epoch=3,
        high_watermark=90,
        voters=[replica(0, 100, 50_000), replica(1, 99, 49_000), replica(2, 10, 40_000)],
        observers=[],
    )
    seen = seen_from(info, 1.0, lag_ms=6000)
    assert (seen.leader, seen.epoch, seen.hw, seen.leo) == (0, 3, 90, 100)
    assert seen.voters == THREE and seen.up == frozenset({A, B})
    assert seen.caught_up_since(B, 49_000) and not seen.caught_up_since(C, 41_000)
    unknown = SimpleNamespace(**{**vars(info), "voters": [replica(0, 1, -1), replica(1, 1, -1)]})
    assert seen_from(unknown, 1.0).up == frozenset({A})  # the leader itself, never unknowns


def test_a_seed_gives_the_same_schedule_within_bounds() -> None:
    from operator_nemesis import MAX_REPLICAS, MIN_REPLICAS, sequences

    for seed in (1, 2, 3, 424242):
        plan = sequences(seed, 20)
        assert plan == sequences(seed, 20) and len(plan) == 20
        assert all(2 <= len(seq) <= 3 for seq in plan)
        steps = [step for seq in plan for step in seq]
        assert {s.kind for s in steps} == {"scale", "kill", "lose", "operator"}
        replicas = MIN_REPLICAS
        for s in (s for s in steps if s.kind == "scale"):
            assert abs(s.replicas - replicas) == 1 and MIN_REPLICAS <= s.replicas <= MAX_REPLICAS
            replicas = s.replicas
    assert sequences(1, 20) != sequences(2, 20)


def test_a_printed_plan_parses_back_to_the_same_schedule() -> None:
    from operator_nemesis import parse_plan, sequences

    for seed in (1, 138901, 577863):
        plan = sequences(seed, 30)
        text = "; ".join(" ".join(map(str, seq)) for seq in plan)
        assert parse_plan(text) == plan
    one = parse_plan("kill(follower#3) scale->5 scale->4")
    assert [str(s) for s in one[0]] == ["kill(follower#3)", "scale->5", "scale->4"]
    for bad, why in (
        ("scale->6", "within 3..5"),
        ("kill(someone)", "not a nemesis step"),
        ("scale->4;;kill(leader)", "an empty sequence"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_plan(bad)


def test_voter_sets_are_read_from_a_segment_file(tmp_path: Path) -> None:
    """log_voters.voter_sets on a segment holding a data batch and two VotersRecords (the
    bytes our node and Kafka write), keyed as DescribeQuorum's answers are."""
    from metaquorum.protocol.control_records import build_control_batch
    from metaquorum.protocol.messages import VotersRecord
    from metaquorum.protocol.records.builder import SimpleRecord, build_batch
    from metaquorum.protocol.types import Uuid

    dirs = [Uuid.random() for _ in range(4)]

    def record(ids: list[int]) -> VotersRecord:
        return VotersRecord(
            voters=[VotersRecord.Voter(voter_id=i, voter_directory_id=dirs[i]) for i in ids]
        )

    seg = tmp_path / "__cluster_metadata-0"
    seg.mkdir()
    (seg / "00000000000000000000.log").write_bytes(
        build_control_batch(0, 1, [record([0, 1, 2])], timestamp_ms=1)
        + build_batch(1, 1, [SimpleRecord(value=b"v")], timestamp_ms=1)
        + build_control_batch(2, 1, [record([0, 1, 2, 3])], timestamp_ms=1)
    )
    got = log_voters.voter_sets(tmp_path)
    assert [o for o, _ in got] == [0, 2]
    assert got[1][1] == frozenset((i, str(dirs[i])) for i in range(4))

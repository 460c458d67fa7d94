"""The Kubernetes nemesis's schedules (pure, no cluster): deterministic per seed, every kind
within any len(KINDS) consecutive seeds of one fault, at most one slow kind a schedule, the API
server's outage within the asked bounds, the other holds within 2-6 s; the long target's
kinds (the operator's work under a fault) likewise, held 8-14 s, and never in make e2e's."""

from __future__ import annotations

from k8s_nemesis import KINDS, LONG_KINDS, OPERATOR_WORK, SLOW, schedule


def test_a_seed_means_one_schedule() -> None:
    assert schedule(41) == schedule(41)
    assert [schedule(s) for s in range(30)] != [schedule(s + 1) for s in range(30)]


def test_consecutive_seeds_cover_every_kind() -> None:
    for start in (0, 7, 1000):
        kinds = {f.kind for s in range(start, start + len(KINDS)) for f in schedule(s, 1)}
        assert kinds == set(KINDS)
        n = len(LONG_KINDS)
        kinds = {
            f.kind for s in range(start, start + n) for f in schedule(s, 1, (30, 90), LONG_KINDS)
        }
        assert kinds == set(LONG_KINDS)


def test_make_e2e_keeps_its_schedules_and_kinds() -> None:
    # the long target's kinds leave make e2e's schedules (and their seeds' meaning) unchanged
    assert not OPERATOR_WORK & set(KINDS)
    assert schedule(256408, 1) == schedule(256408, 1, (30.0, 40.0), KINDS)
    assert all(f.kind in KINDS for s in range(500) for f in schedule(s, 2))


def test_bounds_hold() -> None:
    for seed in range(300):
        sched = schedule(seed, 2, (30.0, 90.0), LONG_KINDS)
        assert len(sched) == 2
        assert sum(f.kind in SLOW for f in sched) <= 1
        for f in sched:
            assert f.role in ("leader", "follower")
            if f.kind == "apiserver":
                assert 30 <= f.hold <= 90
            elif f.kind in OPERATOR_WORK:
                assert 8.0 <= f.hold <= 14.0
            else:
                assert 2.0 <= f.hold <= 6.0

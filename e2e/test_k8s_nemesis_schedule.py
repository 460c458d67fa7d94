"""The Kubernetes nemesis's schedules (pure, no cluster): deterministic per seed, every kind
within any len(KINDS) consecutive seeds of one fault, at most one slow kind a schedule, the API
server's outage within the asked bounds, the other holds within 2-6 s."""

from __future__ import annotations

from k8s_nemesis import KINDS, SLOW, schedule


def test_a_seed_means_one_schedule() -> None:
    assert schedule(41) == schedule(41)
    assert [schedule(s) for s in range(30)] != [schedule(s + 1) for s in range(30)]


def test_consecutive_seeds_cover_every_kind() -> None:
    for start in (0, 7, 1000):
        kinds = {f.kind for s in range(start, start + len(KINDS)) for f in schedule(s, 1)}
        assert kinds == set(KINDS)


def test_bounds_hold() -> None:
    for seed in range(300):
        sched = schedule(seed, apiserver_s=(30.0, 90.0))
        assert len(sched) == 2
        assert sum(f.kind in SLOW for f in sched) <= 1
        for f in sched:
            assert f.role in ("leader", "follower")
            if f.kind == "apiserver":
                assert 30 <= f.hold <= 90
            else:
                assert 2.0 <= f.hold <= 6.0

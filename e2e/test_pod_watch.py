"""pod_watch.majority_down (pure, no cluster): two of three pods down at once is reported once
per stretch, unless the nemesis itself had a fault open then; one pod down (a roll's step) is
never reported."""

from __future__ import annotations

from pod_watch import majority_down

ONE = frozenset({2})
TWO = frozenset({1, 2})
NONE: frozenset[int] = frozenset()


def test_a_roll_one_pod_at_a_time_passes() -> None:
    records = [(0.0, NONE), (1.0, ONE), (2.0, ONE), (3.0, NONE), (4.0, frozenset({0}))]
    assert majority_down(records, 3) == []


def test_two_pods_down_at_once_is_reported_once_per_stretch() -> None:
    records = [(0.0, NONE), (1.0, TWO), (1.2, TWO), (2.0, ONE), (5.0, TWO)]
    found = majority_down(records, 3)
    assert len(found) == 2 and found[0].startswith("t=1.0: pods [1, 2] of 3 down")


def test_the_nemesis_own_faults_are_excused() -> None:
    records = [(0.0, NONE), (1.0, TWO), (2.0, TWO), (9.0, TWO)]
    assert len(majority_down(records, 3, nemesis=[(0.5, 2.5)])) == 1


def test_operator_down_excuses_only_the_pods_the_nemesis_took() -> None:
    from pod_watch import operator_down
    from quorum_watch import Fault

    records = [(0.0, NONE), (1.0, TWO), (2.0, NONE), (30.0, TWO), (31.0, ONE)]
    both_early = [Fault(1, 0.5, 1.5), Fault(2, 0.5, 1.5)]  # the first stretch only
    assert [v.split(":")[0] for v in operator_down(records, 3, both_early)] == ["t=30.0"]
    # pod 2 the nemesis's, pod 1 not: reported, once per stretch, the grace after a window kept
    found = operator_down(records, 3, [Fault(2, 0.0, 40.0)])
    assert len(found) == 2 and found[0].startswith("t=1.0: pods [1, 2] of 3 down")
    assert operator_down(records, 3, [Fault(1, 0.0, 25.0), Fault(2, 0.0, 25.0)]) == []
    assert len(operator_down(records, 3, [Fault(1, 0.0, 15.0), Fault(2, 0.0, 25.0)])) == 1


def test_in_a_doubt_window_only_gone_pods_count() -> None:
    """The campaign's seeds 50040-50049: 10 s after an API server outage's quorum was whole
    again, pods 0 and 1 read not Ready for ~10 s, none deleted: kube-controller-manager's log
    at that moment, "Controller detected that all Nodes are not-Ready. Entering master
    disruption mode" (the node's lease went stale while the API server was away)."""
    from pod_watch import operator_down

    records = [(0.0, NONE), (50.0, TWO), (51.0, NONE), (200.0, TWO)]
    gone = [NONE, NONE, NONE, NONE]
    assert len(operator_down(records, 3, [])) == 2  # readiness alone: both stretches
    # inside the doubt window (0-100 s) not Ready is not down; after it, it is again
    found = operator_down(records, 3, [], gone=gone, doubt=[(0.0, 100.0)])
    assert [v.split(":")[0] for v in found] == ["t=200.0"]
    # pods deleted (gone) inside the window still count
    gone_two = [NONE, TWO, NONE, NONE]
    found = operator_down(records, 3, [], gone=gone_two, doubt=[(0.0, 100.0)])
    assert [v.split(":")[0] for v in found] == ["t=50.0", "t=200.0"]

"""Dangling and duplicate members (members.py): what is named, and that the planner never
"repairs" one by removing a voter (hypothesis over random quorums and pod states)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum_operator import members, planner
from metaquorum_operator.membership import Progress
from metaquorum_operator.observed import (
    Observed,
    ObservedObject,
    ObservedPod,
    ObservedQuorum,
    ObservedStatefulSet,
    ReplicaState,
)

from tests.unit.operator.test_planner import Driver, desired
from tests.unit.operator.world import World


def quorum(voters: dict[int, str], observers: dict[int, str]) -> ObservedQuorum:
    def r(i: int, d: str) -> ReplicaState:
        return ReplicaState(i, d, 100, 1, 1)

    return ObservedQuorum(
        "c",
        min(voters),
        3,
        100,
        tuple(r(i, d) for i, d in sorted(voters.items())),
        tuple(r(i, d) for i, d in sorted(observers.items())),
    )


def pods(n: int, **special: ObservedPod) -> list[ObservedPod]:
    out = [ObservedPod(f"q-{i}", i, True, "r1") for i in range(n)]
    for name, p in special.items():
        out[int(name[1:])] = p
    return out


def sts(n: int) -> ObservedStatefulSet:
    return ObservedStatefulSet(ObservedObject("h"), n, n, n, 1, 1, "r1")


def test_a_healthy_quorum_has_no_problem() -> None:
    q = quorum({0: "A", 1: "B", 2: "C"}, {})
    assert members.problems(Observed(statefulset=sts(3), pods=pods(3)), q, 3) == []


def test_a_voter_whose_pod_cannot_be_scheduled_is_named() -> None:
    stuck = ObservedPod("q-1", 1, False, "r1", unschedulable="Unschedulable")
    q = quorum({0: "A", 1: "B", 2: "C"}, {})
    found = members.problems(Observed(statefulset=sts(3), pods=pods(3, p1=stuck)), q, 3)
    assert [(p["kind"], p["id"]) for p in found] == [("VoterWithoutPod", 1)]
    assert "q-1 cannot be scheduled (Unschedulable)" in found[0]["message"]
    assert "not removed" in found[0]["message"]


def test_a_voter_beyond_the_statefulset_and_a_pod_outside_the_quorum_are_named() -> None:
    q = quorum({0: "A", 1: "B", 3: "D"}, {})
    found = members.problems(Observed(statefulset=sts(3), pods=pods(3)), q, 3)
    assert [(p["kind"], p["id"]) for p in found] == [
        ("PodNotInQuorum", 2),
        ("VoterWithoutPod", 3),
    ]


def test_two_incarnations_of_one_id_are_named() -> None:
    q = quorum({0: "A", 1: "B", 2: "C"}, {1: "B2"})
    found = members.problems(Observed(statefulset=sts(3), pods=pods(3)), q, 3)
    assert [(p["kind"], p["id"]) for p in found] == [("DuplicateIncarnation", 1)]
    assert "B, B2" in found[0]["message"]


def test_only_new_problems_are_posted_again() -> None:
    a = {"kind": "VoterWithoutPod", "id": 1, "message": "m"}
    b = {"kind": "DuplicateIncarnation", "id": 2, "message": "m"}
    assert members.new_problems(None, [a]) == [a]
    assert members.new_problems([a], [a, b]) == [b]
    assert members.new_problems([a, b], [a]) == []


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 5),
    st.data(),
)
def test_the_planner_never_removes_a_dangling_voter_within_the_spec(
    n: int, data: st.DataObject
) -> None:
    """Voters 0..n-1, one or more with an unschedulable pod, maybe a second incarnation of an
    id that no pod runs: every such voter is named, and no plan removes one (only rule 5's
    replacement, when its own pod runs the newer directory caught up, may)."""
    world = World()
    d = Driver(world)
    d.until(desired(n))
    stuck = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
    seen = world.observe()
    ps = [
        ObservedPod(p.name, p.ordinal, False, p.revision, unschedulable="Unschedulable")
        if p.ordinal in stuck
        else p
        for p in seen.pods
    ]
    observed = Observed(seen.objects, seen.statefulset, ps, seen.formed, seen.tombstones)
    q = world.describe().quorum
    assert q is not None
    dup = data.draw(st.one_of(st.none(), st.integers(0, n - 1)))
    if dup is not None:
        stray = ReplicaState(dup, "STRAY", q.high_watermark, world.clock_ms, world.clock_ms)
        q = ObservedQuorum(
            q.cluster_id, q.leader_id, q.leader_epoch, q.high_watermark, q.voters, (stray,)
        )
    found = members.problems(observed, q, n)
    named = {(p["kind"], p["id"]) for p in found}
    assert {("VoterWithoutPod", i) for i in stuck} <= named
    if dup is not None:
        assert ("DuplicateIncarnation", dup) in named
    for target in range(1, n + 1):
        action = planner.plan(desired(target), observed, q, Progress(now_ms=world.clock_ms))
        if isinstance(action, planner.RemoveVoter):
            assert action.key.id >= target, (action, stuck, dup)
        if isinstance(action, planner.Apply) and action.key == "ConfigMap":
            tombstones = set(action.manifest["data"]["removed-directory-ids"].split())
            assert tombstones <= set(world.tombstones), action  # no live voter tombstoned

"""Manual roll (annotation metaquorum.dev/manual-roll: "true") and the causes of restarts.

On the MetadataQuorum: every pod there when the operator first sees it is restarted once, as
for a config change (followers first, highest ordinal first, the leader last after it resigned,
one at a time, each only with a caught-up majority left), then the annotation is removed. On a
pod: that pod only (its replacement comes without the annotation). Each restart's Event reason
is its cause: ConfigChanged, ImageChanged or ManualRoll. Paused, the roll waits and the
ReconciliationPaused condition says so. A restarted operator resumes the roll from the status.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from metaquorum_operator import events, handlers, planner, rolls
from metaquorum_operator.actions import RESTART_CAUSES
from metaquorum_operator.model import Controls
from metaquorum_operator.observed import ObservedPod
from metaquorum_operator.planner import Converged, DeletePod, EndManualRoll, Paused, ResignLeader
from metaquorum_operator.status import compute_status, manual_roll_fields

from tests.unit.operator.test_planner import Driver, converged, desired
from tests.unit.operator.test_planner_properties import Checked, ops, quiet
from tests.unit.operator.world import NAMES, World


def want(world: World, replicas: int = 3, paused: bool = False, **kw: Any) -> planner.Desired:
    """The spec, with the MetadataQuorum's annotations as the world has them now."""
    controls = Controls(paused=paused, manual_roll=world.roll_annotation)
    return dataclasses.replace(desired(replicas, **kw), controls=controls)


def roll(d: Driver, replicas: int = 3, limit: int = 80) -> None:
    for _ in range(limit):
        if isinstance(d.run(want(d.world, replicas)), Converged) and not d.world.roll_annotation:
            return
    raise AssertionError(f"the roll did not finish: {d.actions[-4:]}")


def test_a_manual_roll_restarts_every_pod_once_leader_last_then_removes_the_annotation() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    leader, dirs, n = world.leader, dict(world.voters), len(d.actions)
    world.roll_annotation = True
    roll(d)
    done = d.actions[n:]
    deletes = [a for a in done if isinstance(a, DeletePod)]
    followers = sorted((i for i in range(3) if i != leader), reverse=True)
    assert [a.name for a in deletes] == [NAMES.pod(i) for i in [*followers, leader]]
    assert {a.cause for a in deletes} == {"ManualRoll"}
    resign = next(i for i, a in enumerate(done) if isinstance(a, ResignLeader))
    assert resign < done.index(deletes[-1]) and done.index(deletes[-2]) < resign
    assert isinstance(done[-1], EndManualRoll) and not world.roll_annotation
    assert sum(isinstance(a, EndManualRoll) for a in done) == 1
    assert world.voters == dirs  # restarted with their data
    m = len(d.actions)
    for _ in range(5):
        d.run(want(world))
    assert d.actions[m:] == [] and d.progress.manual_roll is None
    converged(world, desired(3))


def test_the_annotation_on_one_pod_restarts_that_pod_only() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    follower = next(i for i in range(3) if i != world.leader)
    world.pods[follower].manual_roll = True
    n = len(d.actions)
    d.until(desired(3))
    deletes = [a for a in d.actions[n:] if isinstance(a, DeletePod)]
    assert [(a.name, a.cause) for a in deletes] == [(NAMES.pod(follower), "ManualRoll")]
    assert not world.pods[follower].manual_roll  # the new pod came from the template


def test_paused_the_roll_waits_and_the_condition_says_so() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    world.roll_annotation = True
    n = len(d.actions)
    for _ in range(5):
        action = d.run(want(world, paused=True))
        assert isinstance(action, Paused) and action.roll_waits
    assert d.actions[n:] == [] and world.deleted == []
    assert "the manual roll (metaquorum.dev/manual-roll) waits" in action.reason
    status = compute_status(
        desired(3).spec, NAMES, generation=1, observed=world.observe(), quorum=None,
        action=action, now="T", previous=None,
    )  # fmt: skip
    paused = next(c for c in status["conditions"] if c["type"] == "ReconciliationPaused")
    assert paused["status"] == "True" and "manual roll" in paused["message"]
    roll(d)
    assert sorted(world.deleted) == [NAMES.pod(i) for i in range(3)]


def test_a_restarted_operator_resumes_the_roll_without_restarting_a_pod_twice() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    world.roll_annotation = True
    while not world.deleted:
        d.run(want(world))
    assert len(world.deleted) == 1
    status = {"manualRoll": manual_roll_fields(d.progress)}
    assert len(status["manualRoll"]["podUids"]) == 2
    fresh = Driver(world, progress=handlers.progress_from_status(status))
    roll(fresh)
    assert sorted(world.deleted) == [NAMES.pod(i) for i in range(3)]


def test_each_restart_has_its_cause_as_the_event_reason() -> None:
    pod = ObservedPod("q-1", 1, True, revision="old", uid="u1", image="node:1")
    assert rolls.restart_cause(pod, "node:2", "new", frozenset()) == (
        "ImageChanged",
        "q-1 runs image node:1, the spec asks for node:2",
    )
    assert rolls.restart_cause(pod, "node:1", "new", frozenset())[0] == "ConfigChanged"  # type: ignore[index]
    current = dataclasses.replace(pod, revision="new")
    assert rolls.restart_cause(current, "node:1", "new", frozenset()) is None
    assert rolls.restart_cause(current, "node:1", "new", frozenset({"u1"}))[0] == "ManualRoll"  # type: ignore[index]
    annotated = dataclasses.replace(current, manual_roll=True)
    assert rolls.restart_cause(annotated, "node:1", "new", frozenset())[0] == "ManualRoll"  # type: ignore[index]
    for cause in RESTART_CAUSES:
        assert events.event_reason(DeletePod("q-1", "why", cause)) == cause
    assert events.event_reason(EndManualRoll("done")) == "ManualRollDone"
    # a config change rolls with ConfigChanged
    world = World()
    d = Driver(world)
    d.until(desired(3))
    n = len(d.actions)
    d.until(desired(3, config={"controller.quorum.fetch.timeout.ms": "3000"}))
    causes = {a.cause for a in d.actions[n:] if isinstance(a, DeletePod)}
    assert causes == {"ConfigChanged"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_a_manual_roll_under_random_histories_is_safe_and_restarts_each_pod_once(
    history: list[tuple[str, Any]],
) -> None:
    world = Checked()
    world.violations = []
    d = Driver(world)
    d.until(desired(3))
    world.roll_annotation = True
    first = {i: p.uid for i, p in world.pods.items()}
    for op, arg in history:
        if op in ("kill", "lose_disk") and quiet(world) and arg in world.pods:
            getattr(world, op)(arg)
        elif op == "leader":
            vs = world.voter_set()
            if arg in vs and world.caught_up(arg, vs[arg]):
                world.leader, world.epoch = arg, world.epoch + 1
        d.run(want(world))
        assert not world.violations, world.violations
    roll(d, limit=150)
    assert not world.violations, world.violations
    # every pod there when the roll began was replaced, none deleted twice by the roll
    assert all(world.pods[i].uid != uid for i, uid in first.items())
    assert len(world.deleted) == len(set(world.deleted)) <= 3
    converged(world, desired(3))

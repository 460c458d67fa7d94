"""Pausing reconciliation (annotation metaquorum.dev/pause-reconciliation: "true").

While paused the planner returns Paused whatever the world looks like, so the step loop executes
nothing: no object applied, no StatefulSet scaled, no pod deleted, no leader asked to resign, no
voter change (a property over random histories of faults and spec changes); the status still
follows the quorum. Removing the annotation resumes where the quorum was (a scale asked while
paused proceeds, a voter change left open is finished, not sent again).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from metaquorum_operator import events, planner
from metaquorum_operator.model import PAUSE_ANNOTATION, Controls, annotation_on
from metaquorum_operator.planner import Apply, Converged, Desired, Paused, ScaleStatefulSet

from tests.unit.operator.test_planner import Driver, converged, desired
from tests.unit.operator.test_planner_properties import ops, quiet
from tests.unit.operator.world import World

PAUSE = Controls(paused=True)


def paused(want: Desired) -> Desired:
    return dataclasses.replace(want, controls=PAUSE)


def test_the_annotation_is_on_only_when_true() -> None:
    for value, on in (("true", True), (" True ", True), ("false", False), ("yes", False)):
        assert annotation_on({PAUSE_ANNOTATION: value}, PAUSE_ANNOTATION) is on
    assert Controls.from_annotations(None) == Controls()
    assert Controls.from_annotations({PAUSE_ANNOTATION: "true"}).paused


def test_a_paused_new_quorum_creates_nothing() -> None:
    world = World()
    d = Driver(world)
    action = d.run(paused(desired(3)))
    assert isinstance(action, Paused) and d.actions == []
    assert world.objects == {} and world.replicas is None
    assert "on resume: ConfigMap q-config is missing" in action.reason


def test_a_scale_while_paused_waits_then_proceeds_on_resume() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    before = len(d.actions)
    for _ in range(10):
        action = d.run(paused(desired(5)))
        assert isinstance(action, Paused)
        assert isinstance(action.held, Apply | ScaleStatefulSet)  # the scale waits
    assert len(d.actions) == before and world.replicas == 3
    d.until(desired(5))
    converged(world, desired(5))


def test_a_voter_change_left_open_is_not_sent_again_while_paused() -> None:
    world = World(ack=False, commit_delay=6)
    d = Driver(world)
    d.until(desired(1))
    for _ in range(6):
        d.run(desired(2))
        if world.uncommitted is not None:
            break
    assert d.progress.pending is not None
    sent = len(world.changes)
    for _ in range(10):  # the change commits meanwhile; the operator only watches
        assert isinstance(d.run(paused(desired(2))), Paused)
    assert len(world.changes) == sent
    world.ack = True
    d.until(desired(2))
    converged(world, desired(2))


def test_pause_and_resume_post_one_event_each() -> None:
    def status(on: bool) -> dict[str, Any]:
        c = {"type": "ReconciliationPaused", "status": "True" if on else "False", "message": "m"}
        return {"conditions": [c]}

    assert events.pause_event({}, status(False)) is None
    assert events.pause_event(status(False), status(True)) == ("ReconciliationPaused", "m")
    assert events.pause_event(status(True), status(True)) is None
    reason, message = events.pause_event(status(True), status(False)) or ("", "")
    assert reason == "ReconciliationResumed" and PAUSE_ANNOTATION in message


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, ops)
def test_while_paused_nothing_is_done_in_any_world(
    before: list[tuple[str, Any]], during: list[tuple[str, Any]]
) -> None:
    """Any history, then paused through more faults and spec changes: no action at all; the
    quorum converges once resumed."""
    world = World()
    d = Driver(world)
    d.until(desired(3))
    replicas, cfg = 3, 1000
    for phase, history in (("before", before), ("during", during)):
        for op, arg in history:
            if op == "scale":
                replicas = arg
            elif op == "config":
                cfg = arg
            elif op in ("kill", "lose_disk") and quiet(world) and arg in world.pods:
                getattr(world, op)(arg)
            elif op == "stop" and quiet(world) and arg[0] in world.pods:
                world.stop(*arg)
            want = desired(replicas, config={"controller.quorum.fetch.timeout.ms": str(cfg)})
            if phase == "before":
                d.run(want)
                continue
            n, changes, resigns = len(d.actions), len(world.changes), len(world.resigns)
            sts, objects = world.replicas, dict(world.objects)
            for _ in range(2):
                action = d.run(paused(want))
                assert isinstance(action, Paused) and not isinstance(action.held, Paused)
                observed, quorum = world.observe(), world.describe().quorum
                assert isinstance(planner.plan(paused(want), observed, quorum, d.progress), Paused)
            assert d.actions[n:] == [] and len(world.changes) == changes
            assert len(world.resigns) == resigns
            assert (world.replicas, world.objects) == (sts, objects)
    want = desired(replicas, config={"controller.quorum.fetch.timeout.ms": str(cfg)})
    assert isinstance(d.until(want, limit=150), Converged)
    converged(world, want)

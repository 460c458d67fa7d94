"""Volume growth where the driver cannot grow a mounted filesystem: the leader-last roll.

A PVC whose request was raised reaches FileSystemResizePending when its driver grew the volume
but grows the filesystem only when the volume is mounted again (no online expansion). Once the
condition has lasted CatchUp.fs_resize_grace_ms, the planner restarts each pod whose PVC waits
and which mounted it before the condition appeared: as any roll, one pod at a time, highest
ordinal first, the leader last after it resigned, each only with a caught-up majority left;
the Event reason is FileSystemResize. A pod created after the condition appeared mounted the
grown volume and is never restarted for it (no second restart while a driver is slow to clear
the condition); before the grace, and while paused, nothing is restarted.
"""

from __future__ import annotations

import dataclasses
import datetime
from types import SimpleNamespace

from metaquorum_operator import events, rolls, volumes
from metaquorum_operator.kube import _fs_resize_pending_ms
from metaquorum_operator.membership import CatchUp
from metaquorum_operator.model import Controls, OperatorConfig
from metaquorum_operator.observed import ObservedPod
from metaquorum_operator.planner import Converged, DeletePod, Desired, Paused, ResignLeader

from tests.unit.operator.test_planner import Driver, converged, desired
from tests.unit.operator.world import NAMES, World

GRACE_MS = 5000


def want(replicas: int = 3, paused: bool = False) -> Desired:
    d = desired(replicas)
    catch_up = dataclasses.replace(d.operator.catch_up, fs_resize_grace_ms=GRACE_MS)
    return dataclasses.replace(
        d,
        operator=OperatorConfig(catch_up=catch_up),
        controls=Controls(paused=paused),
    )


def converged_world() -> tuple[World, Driver]:
    world = World()
    d = Driver(world)
    d.until(want())
    return world, d


def deletes(d: Driver, start: int) -> list[DeletePod]:
    return [a for a in d.actions[start:] if isinstance(a, DeletePod)]


def test_pending_filesystem_resizes_roll_every_pod_once_leader_last_after_the_grace() -> None:
    world, d = converged_world()
    leader, dirs, n = world.leader, dict(world.voters), len(d.actions)
    world.fs_pending = dict.fromkeys(range(3), world.clock_ms)
    for _ in range(3):  # within the grace: the driver may still grow them online
        d.run(want())
        assert deletes(d, n) == [] and world.fs_pending
    for _ in range(40):
        if isinstance(d.run(want()), Converged) and not world.fs_pending:
            break
    done = d.actions[n:]
    rolled = deletes(d, n)
    followers = sorted((i for i in range(3) if i != leader), reverse=True)
    assert [a.name for a in rolled] == [NAMES.pod(i) for i in [*followers, leader]]
    assert {a.cause for a in rolled} == {"FileSystemResize"}
    assert {events.event_reason(a) for a in rolled} == {"FileSystemResize"}
    assert "FileSystemResizePending" in rolled[0].reason
    resign = next(i for i, a in enumerate(done) if isinstance(a, ResignLeader))
    assert done.index(rolled[-2]) < resign < done.index(rolled[-1])
    assert world.fs_pending == {} and world.voters == dirs  # grown, data kept
    converged(world, want())


def test_only_the_pods_whose_volume_waits_are_restarted_and_each_once() -> None:
    world, d = converged_world()
    follower = next(i for i in range(3) if i != world.leader)
    world.fs_clears_at_mount = False  # the driver is slow to clear the condition
    world.fs_pending = {follower: world.clock_ms}
    n = len(d.actions)
    for _ in range(30):
        d.run(want())
    assert [(a.name, a.cause) for a in deletes(d, n)] == [(NAMES.pod(follower), "FileSystemResize")]
    assert world.fs_pending  # still pending, but the new pod mounted the grown volume


def test_paused_nothing_is_restarted_for_a_pending_resize() -> None:
    world, d = converged_world()
    world.fs_pending = dict.fromkeys(range(3), world.clock_ms - 2 * GRACE_MS)
    n = len(d.actions)
    for _ in range(5):
        assert isinstance(d.run(want(paused=True)), Paused)
    assert deletes(d, n) == [] and world.deleted == []


def test_the_restart_cause_waits_for_the_grace_and_names_the_condition() -> None:
    pod = ObservedPod("q-1", 1, True, revision="r", uid="u1", fs_resize_pending_ms=10_000)
    cause = rolls.restart_cause
    assert cause(pod, "i", "r", frozenset()) is None  # no grace given: never
    assert cause(pod, "i", "r", frozenset(), now_ms=14_999, grace_ms=5000) is None
    found = cause(pod, "i", "r", frozenset(), now_ms=15_000, grace_ms=5000)
    assert found == (
        "FileSystemResize",
        "the volume of q-1 has waited 5 s in FileSystemResizePending: its driver grows the"
        " filesystem when the pod restarts",
    )
    fresh = dataclasses.replace(pod, fs_resize_pending_ms=None)
    assert cause(fresh, "i", "r", frozenset(), now_ms=10**9, grace_ms=5000) is None


def _at(seconds: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC)


def _pvc(*conditions: tuple[str, str, int]) -> SimpleNamespace:
    conds = [
        SimpleNamespace(type=t, status=s, last_transition_time=_at(at)) for t, s, at in conditions
    ]
    return SimpleNamespace(status=SimpleNamespace(conditions=conds))


def test_the_pvc_condition_counts_only_for_a_pod_that_mounted_the_volume_before_it() -> None:
    pending = _pvc(("Resizing", "True", 90), ("FileSystemResizePending", "True", 100))
    assert _fs_resize_pending_ms(pending, _at(50)) == 100_000
    assert _fs_resize_pending_ms(pending, _at(100)) == 100_000  # same second: restart once more
    assert _fs_resize_pending_ms(pending, _at(101)) is None  # mounted the grown volume
    assert _fs_resize_pending_ms(_pvc(("FileSystemResizePending", "False", 100)), _at(50)) is None
    assert _fs_resize_pending_ms(_pvc(), _at(50)) is None
    assert _fs_resize_pending_ms(None, _at(50)) is None  # no PVC (yet)


def test_the_grace_comes_from_the_environment_and_the_condition_names_the_roll() -> None:
    assert CatchUp().fs_resize_grace_ms == 60_000
    env = {"METAQUORUM_FS_RESIZE_GRACE_MS": "15000"}
    assert OperatorConfig.from_env(env).catch_up.fs_resize_grace_ms == 15_000
    claim = volumes.Claim("data-q-0", "1Gi", "512Mi", "xfs", fs_resize_pending=True)
    step = volumes.plan("1Gi", [claim], {"xfs": True})
    assert (step.status, step.reason) == ("False", "Resizing")
    assert "filesystem resize pending" in step.message
    assert "the operator restarts each such pod, leader last" in step.message

"""The recover-from action (recovery.py): the planner asks the named survivor's pod to recover
only when the check accepts it, restarts only the incarnation named by the token, waits while it
re-forms, asks again when the restart missed the request, refuses on a failed recovery, and
clears the request once a leader answers, then the annotation; the format script runs
`storage recover` once."""

from __future__ import annotations

import dataclasses

import pytest
from metaquorum_operator import builders, events, planner, recovery
from metaquorum_operator.model import Controls
from metaquorum_operator.observed import Observed, ObservedPod
from metaquorum_operator.quorum_lost import NodeView

from tests.unit.operator.test_planner import Driver, desired
from tests.unit.operator.world import NAMES, World

VOTERS = (0, 1, 2)
PODS = [ObservedPod(NAMES.pod(i), i, False, uid=f"uid-{i}") for i in range(3)]
VIEWS = [
    NodeView(0, True),  # came back empty
    NodeView(1, True, log_end_offset=950, log_end_epoch=6, voters=VOTERS),
    NodeView(2, True),  # came back empty
]


def want(pod: str | None = "q-1") -> planner.Desired:
    return dataclasses.replace(desired(3), controls=Controls(recover_from=pod))


def test_no_annotation_or_a_refused_one_changes_nothing() -> None:
    for pod in (None, "q-0", "q-9"):
        action = planner.plan(want(pod), Observed(pods=PODS), None, None, VIEWS)
        assert isinstance(action, planner.QuorumLost), (pod, action)


def test_the_accepted_survivor_is_asked_to_recover_through_the_configmap() -> None:
    action = planner.plan(want(), Observed(pods=PODS), None, None, VIEWS)
    assert isinstance(action, planner.Recover), action
    assert (action.pod, action.ordinal, action.token) == ("q-1", 1, "uid-1")
    data = action.configmap["data"]
    assert data[recovery.RECOVER_KEY] == "1 uid-1" and data["bootstrap"] == "join"
    assert "storage recover" in action.reason


def test_paused_holds_the_recovery() -> None:
    paused = dataclasses.replace(want(), controls=Controls(recover_from="q-1", paused=True))
    action = planner.plan(paused, Observed(pods=PODS), None, None, VIEWS)
    assert isinstance(action, planner.Paused) and isinstance(action.held, planner.Recover)


def _step(pods: list[ObservedPod], views: list[NodeView], token: str = "uid-1") -> object:
    observed = Observed(pods=pods, recovery=f"1 {token}")
    # the annotation may be gone by now: a request under way is seen through
    return planner.plan(want(None), observed, None, None, views)


def test_a_request_under_way_restarts_only_the_named_incarnation_then_waits() -> None:
    action = _step(PODS, VIEWS)
    assert isinstance(action, planner.Recover) and action.token == "uid-1"
    terminating = [dataclasses.replace(PODS[1], terminating=True), PODS[0], PODS[2]]
    assert isinstance(_step(terminating, VIEWS), planner.Wait)
    new = [PODS[0], dataclasses.replace(PODS[1], uid="uid-1b"), PODS[2]]
    starting = [VIEWS[0], NodeView(1, False), VIEWS[2]]
    assert isinstance(_step(new, starting), planner.Wait)
    alone = [VIEWS[0], NodeView(1, True, log_end_offset=951, voters=(1,)), VIEWS[2]]
    w = _step(new, alone)
    assert isinstance(w, planner.Wait) and "re-formed alone" in w.reason


def test_a_restart_that_missed_the_request_asks_again_with_the_new_uid() -> None:
    new = [PODS[0], dataclasses.replace(PODS[1], uid="uid-1b"), PODS[2]]
    action = _step(new, VIEWS)  # it answers with the old voter set: not recovered
    assert isinstance(action, planner.Recover) and action.token == "uid-1b"
    assert action.configmap["data"][recovery.RECOVER_KEY] == "1 uid-1b"


def test_a_failed_recovery_is_refused() -> None:
    line = "storage recover: the log has damage"
    new = [PODS[0], dataclasses.replace(PODS[1], uid="uid-1b", volume_refused=line), PODS[2]]
    action = _step(new, [VIEWS[0], NodeView(1, False), VIEWS[2]])
    assert isinstance(action, planner.Refused) and action.code == "RecoveryFailed"
    assert line in action.reason


def test_parse() -> None:
    assert recovery.parse("1 abc") == recovery.Request(1, "abc")
    assert recovery.parse("") is None and recovery.parse("x abc") is None
    assert recovery.parse("1") is None


@pytest.mark.parametrize("annotation", [None, "q-1"])
def test_once_a_leader_answers_the_request_is_cleared_from_the_configmap(
    annotation: str | None,
) -> None:
    """First the request leaves the ConfigMap; only then is the annotation removed (below)."""
    world = World()
    d = Driver(world)
    d.until(desired(3))
    seen = world.observe()
    # as the Recover action left it: the ConfigMap with the request, its hash stamped
    with_request = desired(3).manifests(1, True, seen.tombstones, "1 uid-1")["ConfigMap"]
    cm = seen.objects["ConfigMap"]
    assert cm is not None
    stamped = dataclasses.replace(
        cm, spec_hash=with_request["metadata"]["annotations"][builders.SPEC_HASH]
    )
    objects = {**seen.objects, "ConfigMap": stamped}
    observed = dataclasses.replace(seen, objects=objects, recovery="1 uid-1")
    action = planner.plan(want(annotation), observed, world.describe().quorum, None, ())
    assert isinstance(action, planner.Apply) and action.key == "ConfigMap", action
    assert recovery.RECOVER_KEY not in action.manifest["data"]


def test_the_annotation_is_removed_once_a_leader_answers_and_no_request_is_left() -> None:
    """Left in place, recover-from would recover from the same pod at the next lost majority
    without the user deciding again (the e2e recovery left it)."""
    world = World()
    d = Driver(world)
    d.until(desired(3))
    world.recover_annotation = "q-1"
    n = len(d.actions)
    for _ in range(5):
        controls = Controls(recover_from=world.recover_annotation)
        last = d.run(dataclasses.replace(desired(3), controls=controls))
    done = d.actions[n:]
    assert [type(a) for a in done] == [planner.EndRecovery], done
    assert world.recover_annotation is None and isinstance(last, planner.Converged)
    assert events.event_reason(done[0]) == "RecoveryDone"
    assert "recover-from" in events.describe(done[0])

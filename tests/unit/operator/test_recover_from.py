"""The recover-from annotation's check: only a surviving voter holding the most is accepted;
an empty, unreachable, foreign or behind pod is refused with one line naming the better one."""

from __future__ import annotations

from metaquorum_operator.observed import ObservedPod
from metaquorum_operator.quorum_lost import NodeView, lost_majority
from metaquorum_operator.recover_from import check_survivor, requested

from tests.unit.operator.world import NAMES

VOTERS = (0, 1, 2, 3, 4)
PODS = [ObservedPod(NAMES.pod(i), i, False) for i in range(5)]
VIEWS = [
    NodeView(0, True, log_end_offset=900, log_end_epoch=6, voters=VOTERS),
    NodeView(1, True, log_end_offset=950, log_end_epoch=6, voters=VOTERS),
    NodeView(2, True),  # empty
    NodeView(3, True),  # empty
    NodeView(4, False),  # unreachable
]


def _check(pod: str) -> tuple[int | None, str]:
    lost = lost_majority(PODS, VIEWS)
    assert lost is not None and lost.survivors == (0, 1)
    return check_survivor(pod, NAMES, lost, VIEWS)


def test_the_most_advanced_survivor_is_accepted() -> None:
    ordinal, line = _check("q-1")
    assert ordinal == 1 and "is the survivor to recover from" in line


def test_refusals_name_the_better_survivor() -> None:
    for pod, why in (
        ("q-0", "holds less than q-1"),
        ("q-2", "came back empty"),
        ("q-4", "is not a surviving voter"),
        ("other-0", "is not a pod of q"),
        ("q-x", "is not a pod of q"),
    ):
        ordinal, line = _check(pod)
        assert ordinal is None and why in line and line.endswith("recover from q-1"), line
        assert "\n" not in line


def test_requested() -> None:
    assert requested({"metaquorum.dev/recover-from": " q-1 "}) == "q-1"
    assert requested({}) is None and requested(None) is None


def test_the_planner_reports_the_check_and_still_does_nothing() -> None:
    import dataclasses

    from metaquorum_operator import planner
    from metaquorum_operator.model import Controls
    from metaquorum_operator.observed import Observed

    from tests.unit.operator.test_planner import desired

    want = dataclasses.replace(desired(5), controls=Controls(recover_from="q-2"))
    action = planner.plan(want, Observed(pods=PODS), None, None, VIEWS)
    assert isinstance(action, planner.QuorumLost)
    assert "recover-from: q-2 came back empty; recover from q-1" in action.reason

"""Status from observation: conditions keep their transition time; quorum facts when known."""

from __future__ import annotations

from metaquorum_operator.model import Names, QuorumSpec
from metaquorum_operator.planner import (
    Apply,
    Converged,
    Observed,
    ObservedObject,
    ObservedQuorum,
    ObservedStatefulSet,
    VoterKey,
    Wait,
)
from metaquorum_operator.status import compute_status, differs

NAMES = Names("q", "ns")
STS = ObservedStatefulSet(obj=ObservedObject("h"), replicas=3, ready_replicas=3)
WITH_STS = Observed(statefulset=STS)


def status(action, observed=WITH_STS, quorum=None, now="T1", previous=None):  # type: ignore[no-untyped-def]
    return compute_status(
        QuorumSpec(replicas=3),
        NAMES,
        generation=4,
        observed=observed,
        quorum=quorum,
        action=action,
        now=now,
        previous=previous,
    )


def cond(s: dict, ctype: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in s["conditions"] if c["type"] == ctype)


def test_converged_is_ready_and_running() -> None:
    s = status(Converged())
    assert s["phase"] == "Running" and s["readyReplicas"] == 3 and s["replicas"] == 3
    assert cond(s, "Ready")["status"] == "True"
    assert cond(s, "ResourcesReconciled")["status"] == "True"
    assert cond(s, "QuorumObserved")["status"] == "Unknown"
    assert all(c["observedGeneration"] == 4 for c in s["conditions"])
    assert s["observedGeneration"] == 4
    assert s["labelSelector"] == NAMES.label_selector()


def test_transition_time_moves_only_when_the_status_flips() -> None:
    first = status(Converged(), now="T1")
    same = status(Converged(), now="T2", previous=first)
    assert cond(same, "Ready")["lastTransitionTime"] == "T1"
    flipped = status(Wait("q-1 down"), now="T3", previous=same)
    assert cond(flipped, "Ready")["lastTransitionTime"] == "T3"
    assert cond(flipped, "Ready")["status"] == "False"
    assert "q-1 down" in cond(flipped, "Ready")["message"]
    assert flipped["phase"] == "Degraded"
    assert cond(flipped, "ResourcesReconciled")["lastTransitionTime"] == "T1"


def test_applying_marks_resources_not_reconciled() -> None:
    s = status(Apply("ConfigMap", {}, create=True, reason="ConfigMap q-config is missing"))
    c = cond(s, "ResourcesReconciled")
    assert (c["status"], c["reason"], c["message"]) == (
        "False",
        "Applying",
        "ConfigMap q-config is missing",
    )
    assert status(Wait("x"), observed=Observed())["phase"] == "Pending"


def test_quorum_facts_are_reported_when_observed() -> None:
    q = ObservedQuorum(
        cluster_id="abc",
        leader_id=1,
        leader_epoch=7,
        high_watermark=42,
        voters=(VoterKey(0, "d0"), VoterKey(1, "d1")),
        observers=(VoterKey(3, "d3"),),
    )
    s = status(Converged(), quorum=q)
    assert (s["clusterId"], s["leader"], s["epoch"], s["highWatermark"]) == ("abc", 1, 7, 42)
    assert s["voters"] == [{"id": 0, "directoryId": "d0"}, {"id": 1, "directoryId": "d1"}]
    assert s["observers"] == [{"id": 3, "directoryId": "d3"}]
    assert cond(s, "QuorumObserved")["status"] == "True"


def test_differs_treats_none_as_absent() -> None:
    s = status(Converged())
    stored = {k: v for k, v in s.items() if v is not None}
    assert not differs(s, stored)
    assert differs(s, {**stored, "readyReplicas": 2})

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
    Refused,
    VoterKey,
    Wait,
)
from metaquorum_operator.status import REFUSED_REASON, compute_status, differs

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
    assert cond(s, "QuorumAvailable")["status"] == "Unknown"
    assert s["leader"] is None and s["epoch"] is None
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
    c = cond(s, "QuorumAvailable")
    assert (c["status"], c["reason"], c["observedGeneration"]) == ("True", "LeaderElected", 4)
    assert "leader 1 in epoch 7" in c["message"]


def test_a_replica_without_directory_id_has_no_directory_id_field() -> None:
    q = ObservedQuorum("abc", 0, 1, 0, voters=(VoterKey(0, ""),))
    assert status(Converged(), quorum=q)["voters"] == [{"id": 0}]


def test_unreachable_quorum_is_not_available_with_the_error() -> None:
    before = status(Converged(), quorum=ObservedQuorum("abc", 1, 7, 42), now="T1")
    s = compute_status(
        QuorumSpec(replicas=3),
        NAMES,
        generation=5,
        observed=WITH_STS,
        quorum=None,
        action=Converged(),
        now="T2",
        previous=before,
        quorum_error="no bootstrap controller answered",
        cluster_id="cid",
    )
    c = cond(s, "QuorumAvailable")
    assert (c["status"], c["reason"], c["lastTransitionTime"]) == (
        "False",
        "QuorumUnreachable",
        "T2",
    )
    assert c["message"] == "no bootstrap controller answered"
    assert c["observedGeneration"] == 5
    assert s["clusterId"] == "cid"
    # the leader and epoch are not kept from an earlier observation: status is observation
    assert s["leader"] is None and s["epoch"] is None and s["voters"] is None


def test_no_leader_is_not_available() -> None:
    s = status(Wait("x"), quorum=ObservedQuorum("abc", -1, 3, 0))
    assert cond(s, "QuorumAvailable")["reason"] == "NoLeader"
    assert s["leader"] is None


def test_refused_replica_change_keeps_running_but_not_ready() -> None:
    s = status(Refused("set spec.replicas back to 3"))
    c = cond(s, "Ready")
    assert (c["status"], c["reason"]) == ("False", REFUSED_REASON)
    assert "spec.replicas back to 3" in c["message"]
    assert s["phase"] == "Running"


def test_differs_treats_none_as_absent() -> None:
    s = status(Converged())
    stored = {k: v for k, v in s.items() if v is not None}
    assert not differs(s, stored)
    assert differs(s, {**stored, "readyReplicas": 2})

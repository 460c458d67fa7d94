"""Status from observation: Available / Progressing / Degraded, replicas with directory ids and
lag, the pending voter change, transition times that move only when a status flips."""

from __future__ import annotations

from typing import Any

from metaquorum_operator.membership import CatchUp, PendingChange, Progress, advance
from metaquorum_operator.model import Names, QuorumSpec
from metaquorum_operator.observed import (
    Observed,
    ObservedObject,
    ObservedQuorum,
    ObservedStatefulSet,
    ReplicaState,
    VoterKey,
)
from metaquorum_operator.planner import (
    AddVoter,
    Apply,
    Converged,
    DeletePod,
    EndManualRoll,
    Paused,
    Refused,
    ScaleStatefulSet,
    Wait,
)
from metaquorum_operator.status import REFUSED_REASON, compute_status, differs

NAMES = Names("q", "ns")
STS = ObservedStatefulSet(obj=ObservedObject("h"), replicas=3, ready_replicas=3)
WITH_STS = Observed(statefulset=STS, formed=True)
NOW = 50_000


def replica(i: int, d: str, leo: int = 100, seen: int = NOW) -> ReplicaState:
    return ReplicaState(i, d, leo, seen, seen)


HEALTHY = ObservedQuorum(
    "abc",
    leader_id=1,
    leader_epoch=7,
    high_watermark=95,
    voters=(replica(0, "d0", 98), replica(1, "d1"), replica(2, "d2", 99)),
    observers=(replica(3, "d3", 40, NOW - 10_000),),
)


def status(action: Any, observed: Observed = WITH_STS, quorum: Any = None, **kw: Any) -> Any:
    args: dict[str, Any] = {"now": "T1", "previous": None, **kw}
    return compute_status(
        QuorumSpec(replicas=3),
        NAMES,
        generation=4,
        observed=observed,
        quorum=quorum,
        action=action,
        **args,
    )


def cond(s: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next(c for c in s["conditions"] if c["type"] == ctype)


def test_converged_healthy_quorum_is_available_not_progressing_not_degraded() -> None:
    s = status(Converged(), quorum=HEALTHY)
    assert s["phase"] == "Running" and s["readyReplicas"] == 3 and s["replicas"] == 3
    assert [(c["type"], c["status"]) for c in s["conditions"]] == [
        ("Available", "True"),
        ("Progressing", "False"),
        ("Degraded", "False"),
        ("ReconciliationPaused", "False"),
        ("Upgrading", "False"),
        ("QuorumLost", "False"),
    ]
    assert "leader 1 in epoch 7, 3 of 3 voters caught up" in cond(s, "Available")["message"]
    assert (s["clusterId"], s["leader"], s["epoch"], s["highWatermark"]) == ("abc", 1, 7, 95)
    assert s["voters"] == [
        {"id": 0, "directoryId": "d0", "lag": 2},
        {"id": 1, "directoryId": "d1", "lag": 0},
        {"id": 2, "directoryId": "d2", "lag": 1},
    ]
    assert s["observers"] == [{"id": 3, "directoryId": "d3", "lag": 60}]
    assert s["voterIds"] == "0,1,2"
    assert s["pendingOperation"] is None
    assert all(c["observedGeneration"] == 4 for c in s["conditions"])


def test_a_voter_not_rejoining_within_the_bound_is_degraded() -> None:
    one_down = ObservedQuorum(
        "abc", 1, 7, 95, voters=(replica(0, "d0", 10, NOW - 9000), replica(1, "d1"))
    )
    settings = CatchUp()
    first = advance(Progress(), one_down, 1_000, settings)
    s = status(Wait("x"), quorum=one_down, progress=first)
    d = cond(s, "Degraded")
    assert (d["status"], d["reason"], d["message"]) == (
        "False",
        "CatchingUp",
        "voters catching up: 0",
    )
    assert cond(s, "Available")["reason"] == "VotersLagging"  # 1 of 2 is no majority
    later = advance(first, one_down, 1_000 + settings.rejoin_bound_ms, settings)
    s = status(Wait("x"), quorum=one_down, progress=later)
    d = cond(s, "Degraded")
    assert (d["status"], d["reason"]) == ("True", "VoterNotCaughtUp")
    assert d["message"] == "voters not caught up for 30 s or more: 0"
    assert s["phase"] == "Degraded"
    # caught up again: the clock restarts
    back = advance(later, HEALTHY, 99_000, settings)
    assert back.lagging_since == {}


def test_a_voter_change_in_flight_is_progressing_with_its_pending_operation() -> None:
    key = VoterKey(3, "d3")
    progress = Progress(pending=PendingChange("add", key, issued_ms=7, reflected_at=120))
    s = status(AddVoter(key, "node 3 caught up"), quorum=HEALTHY, progress=progress)
    c = cond(s, "Progressing")
    assert (c["status"], c["reason"], c["message"]) == ("True", "AddingVoter", "node 3 caught up")
    assert s["pendingOperation"] == {
        "kind": "add",
        "id": 3,
        "directoryId": "d3",
        "step": "committing",
        "issuedAtMs": 7,
    }
    assert s["phase"] == "Scaling"


def test_transition_time_moves_only_when_the_status_flips() -> None:
    first = status(Converged(), quorum=HEALTHY, now="T1")
    same = status(Converged(), quorum=HEALTHY, now="T2", previous=first)
    assert cond(same, "Progressing")["lastTransitionTime"] == "T1"
    flipped = status(Wait("q-1 down"), quorum=HEALTHY, now="T3", previous=same)
    assert cond(flipped, "Progressing")["lastTransitionTime"] == "T3"
    assert cond(flipped, "Progressing")["message"] == "q-1 down"
    assert cond(flipped, "Available")["lastTransitionTime"] == "T1"


def test_applying_and_pending_phases() -> None:
    s = status(Apply("ConfigMap", {}, create=True, reason="ConfigMap q-config is missing"))
    assert cond(s, "Progressing")["reason"] == "Applying"
    assert status(Wait("x"), observed=Observed())["phase"] == "Pending"
    creating = Observed(statefulset=STS, formed=False)
    assert status(Wait("no leader"), observed=creating)["phase"] == "Creating"


def test_unreachable_quorum_is_not_available_with_the_error() -> None:
    before = status(Converged(), quorum=HEALTHY, now="T1")
    s = status(
        Converged(),
        now="T2",
        previous=before,
        quorum_error="no bootstrap controller answered",
        cluster_id="cid",
    )
    c = cond(s, "Available")
    assert (c["status"], c["reason"], c["lastTransitionTime"]) == (
        "False",
        "QuorumUnreachable",
        "T2",
    )
    assert c["message"] == "no bootstrap controller answered"
    assert s["clusterId"] == "cid"
    # nothing is kept from an earlier observation: status is observation
    assert s["leader"] is None and s["voters"] is None and s["voterIds"] is None


def test_no_leader_and_not_observed() -> None:
    s = status(Wait("x"), quorum=ObservedQuorum("abc", -1, 3, 0))
    assert cond(s, "Available")["reason"] == "NoLeader" and s["leader"] is None
    s = status(Wait("x"), observed=Observed())
    assert cond(s, "Available")["status"] == "Unknown"


def test_a_refused_volume_is_degraded_with_the_fix() -> None:
    s = status(Refused("q-1: the volume holds cluster X: delete this pod's PVC"), quorum=HEALTHY)
    c = cond(s, "Degraded")
    assert (c["status"], c["reason"]) == ("True", REFUSED_REASON)
    assert "delete this pod's PVC" in c["message"]
    assert s["phase"] == "Degraded"


def test_a_replica_without_directory_or_progress_has_only_its_id() -> None:
    q = ObservedQuorum("abc", 0, 1, 0, voters=(ReplicaState(0, ""),))
    assert status(Converged(), quorum=q)["voters"] == [{"id": 0}]


def test_differs_treats_none_as_absent() -> None:
    s = status(Converged(), quorum=HEALTHY)
    stored = {k: v for k, v in s.items() if v is not None}
    assert not differs(s, stored)
    assert differs(s, {**stored, "readyReplicas": 2})


def test_ready_voters_and_the_operation_fill_the_printer_columns() -> None:
    s = status(Converged(), quorum=HEALTHY)
    assert s["readyVoters"] == "3/3" and s["operation"] == "Idle"
    lagging = ObservedQuorum(
        "abc", 1, 7, 95, voters=(replica(0, "d0", 10, NOW - 60_000), replica(1, "d1"))
    )
    s = status(Wait("pod 2 is not a voter yet"), quorum=lagging)
    assert s["readyVoters"] == "1/3" and s["operation"] == "Waiting"
    assert status(Wait("no leader"))["readyVoters"] == "0/3"
    key = VoterKey(3, "d3")
    pending = Progress(pending=PendingChange("add", key, issued_ms=NOW))
    s = status(Wait("add voter 3: committing"), quorum=HEALTHY, progress=pending)
    assert s["operation"] == "AddVoter 3"
    assert status(AddVoter(key, "caught up"), quorum=HEALTHY)["operation"] == "AddVoter 3"
    roll = DeletePod("q-2", "q-2 runs an old revision")
    assert status(roll, quorum=HEALTHY)["operation"] == "Rolling q-2"
    assert status(ScaleStatefulSet(4, "up"), quorum=HEALTHY)["operation"] == "Scaling to 4"
    done = status(EndManualRoll("manual roll done"), quorum=HEALTHY)
    assert done["operation"] == "Rolling" and cond(done, "Progressing")["reason"] == "Rolling"


def test_paused_sets_the_condition_phase_and_operation_and_says_what_waits() -> None:
    held = ScaleStatefulSet(5, "scaling up to 5 replicas")
    s = status(Paused(held), quorum=HEALTHY, now="T1")
    paused = cond(s, "ReconciliationPaused")
    assert (paused["status"], paused["reason"]) == ("True", "PausedByAnnotation")
    assert 'metaquorum.dev/pause-reconciliation="true"' in paused["message"]
    assert "on resume: scaling up to 5 replicas" in paused["message"]
    assert cond(s, "Progressing")["status"] == "False"
    assert cond(s, "Progressing")["reason"] == "ReconciliationPaused"
    assert (s["phase"], s["operation"]) == ("Paused", "Paused")
    assert s["leader"] == 1 and s["readyVoters"] == "3/3"  # observation goes on
    resumed = status(held, quorum=HEALTHY, now="T2", previous=s)
    again = cond(resumed, "ReconciliationPaused")
    assert (again["status"], again["reason"], again["lastTransitionTime"]) == (
        "False",
        "Reconciling",
        "T2",
    )
    assert resumed["phase"] == "Scaling"

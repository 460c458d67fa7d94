"""MetadataQuorum status from observation: phase, conditions, replica counts, quorum facts.

Role: `compute_status` is pure: what the operator observed (objects, pods, the quorum when it can
describe it) and the action the planner chose -> the status to write. Status is a cache of
observation, never an input to decisions (the planner does not read it).

Conditions (metav1.Condition shape, positive polarity, each with observedGeneration):
- `Ready`: all spec.replicas pods exist, are ready and nothing is pending.
- `ResourcesReconciled`: every owned object matches the spec (reason Applying while not).
- `QuorumAvailable`: DescribeQuorum answered with an elected leader (True, reason
  LeaderElected); False with reason QuorumUnreachable and the admin client's one-line error once
  the StatefulSet exists; Unknown (NotObserved) before, or where the workload forms no quorum.
  Leader, epoch, highWatermark, voters and observers are the leader's answer, absent otherwise.
A condition's lastTransitionTime changes only when its status does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from metaquorum_operator.model import Names, QuorumSpec
from metaquorum_operator.planner import (
    Action,
    Apply,
    Converged,
    DeletePod,
    Observed,
    ObservedQuorum,
    Refused,
    ScaleStatefulSet,
    VoterKey,
)


def condition(
    ctype: str,
    status: str,
    reason: str,
    message: str,
    *,
    generation: int,
    now: str,
    previous: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    old = next((c for c in previous if c.get("type") == ctype), None)
    since = old["lastTransitionTime"] if old and old.get("status") == status else now
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }


REFUSED_REASON = "VoterChangeRefused"


def phase_of(
    spec: QuorumSpec, observed: Observed, action: Action, previous_phase: str | None
) -> str:
    sts = observed.statefulset
    if sts is None:
        return "Pending"
    if isinstance(action, Converged):
        return "Running"
    if isinstance(action, Refused):
        return "Running" if sts.ready_replicas >= sts.replicas else "Degraded"
    if isinstance(action, ScaleStatefulSet) or sts.replicas != spec.replicas:
        return "Scaling"
    if previous_phase in ("Running", "Degraded") and not isinstance(action, (Apply, DeletePod)):
        return "Degraded"
    if previous_phase == "Scaling":
        return "Scaling"
    return "Creating"


def compute_status(
    spec: QuorumSpec,
    names: Names,
    *,
    generation: int,
    observed: Observed,
    quorum: ObservedQuorum | None,
    action: Action,
    now: str,
    previous: Mapping[str, Any] | None,
    quorum_error: str | None = None,
    cluster_id: str | None = None,
) -> dict[str, Any]:
    prev = previous or {}
    prev_conds: Sequence[Mapping[str, Any]] = prev.get("conditions") or []
    sts = observed.statefulset
    ready = sts.ready_replicas if sts else 0
    phase = phase_of(spec, observed, action, prev.get("phase"))
    is_ready = isinstance(action, Converged)
    refused = isinstance(action, Refused)
    conds = [
        condition(
            "Ready",
            "True" if is_ready else "False",
            "QuorumReady" if is_ready else REFUSED_REASON if refused else phase,
            f"{ready}/{spec.replicas} replicas ready" + ("" if is_ready else f"; {action.reason}"),
            generation=generation,
            now=now,
            previous=prev_conds,
        ),
        condition(
            "ResourcesReconciled",
            "False" if isinstance(action, Apply) else "True",
            "Applying" if isinstance(action, Apply) else "UpToDate",
            action.reason
            if isinstance(action, Apply)
            else "StatefulSet, Services, PodDisruptionBudget and ConfigMap match the spec",
            generation=generation,
            now=now,
            previous=prev_conds,
        ),
    ]
    status: dict[str, Any] = {
        "phase": phase,
        "observedGeneration": generation,
        "replicas": sts.replicas if sts else 0,
        "readyReplicas": ready,
        "labelSelector": names.label_selector(),
        "clusterId": None,
        "leader": None,
        "epoch": None,
        "highWatermark": None,
        "voters": None,
        "observers": None,
    }
    status["clusterId"] = cluster_id
    conds.append(quorum_condition(quorum, quorum_error, generation, now, prev_conds))
    if quorum is not None and quorum.leader_id >= 0:
        status.update(quorum_fields(quorum))
        status["clusterId"] = quorum.cluster_id or cluster_id
    status["conditions"] = conds
    return status


def quorum_fields(quorum: ObservedQuorum) -> dict[str, Any]:
    """The status fields DescribeQuorum fills (directoryId omitted when the replica has none)."""

    def node(v: VoterKey) -> dict[str, Any]:
        return {"id": v.id, "directoryId": v.directory_id} if v.directory_id else {"id": v.id}

    return {
        "leader": quorum.leader_id,
        "epoch": quorum.leader_epoch,
        "highWatermark": quorum.high_watermark,
        "voters": [node(v) for v in quorum.voters],
        "observers": [node(o) for o in quorum.observers],
    }


def quorum_condition(
    quorum: ObservedQuorum | None,
    error: str | None,
    generation: int,
    now: str,
    previous: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    if quorum is not None and quorum.leader_id >= 0:
        status, reason = "True", "LeaderElected"
        message = (
            f"leader {quorum.leader_id} in epoch {quorum.leader_epoch}, "
            f"{len(quorum.voters)} voters, high watermark {quorum.high_watermark}"
        )
    elif quorum is not None:
        status, reason = "False", "NoLeader"
        message = f"no leader elected (epoch {quorum.leader_epoch})"
    elif error:
        status, reason, message = "False", "QuorumUnreachable", error
    else:
        status, reason, message = "Unknown", "NotObserved", "the quorum has not been described"
    return condition(
        "QuorumAvailable",
        status,
        reason,
        message,
        generation=generation,
        now=now,
        previous=previous,
    )


def differs(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether writing `new` would change the stored status (None values mean absent)."""
    old = old or {}
    return any(old.get(k) != v for k, v in new.items())

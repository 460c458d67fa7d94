"""MetadataQuorum status from observation: phase, conditions, replica counts, quorum facts.

Role: `compute_status` is pure: what the operator observed (objects, pods, the quorum when it can
describe it) and the action the planner chose -> the status to write. Status is a cache of
observation, never an input to decisions (the planner does not read it).

Conditions (metav1.Condition shape, positive polarity, each with observedGeneration):
- `Ready`: all spec.replicas pods exist, are ready and nothing is pending.
- `ResourcesReconciled`: every owned object matches the spec (reason Applying while not).
- `QuorumObserved`: the operator could describe the quorum (Unknown with reason
  QuorumNotObservable until the node exists).
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
    ScaleStatefulSet,
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


def phase_of(
    spec: QuorumSpec, observed: Observed, action: Action, previous_phase: str | None
) -> str:
    sts = observed.statefulset
    if sts is None:
        return "Pending"
    if isinstance(action, Converged):
        return "Running"
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
) -> dict[str, Any]:
    prev = previous or {}
    prev_conds: Sequence[Mapping[str, Any]] = prev.get("conditions") or []
    sts = observed.statefulset
    ready = sts.ready_replicas if sts else 0
    phase = phase_of(spec, observed, action, prev.get("phase"))
    is_ready = isinstance(action, Converged)
    conds = [
        condition(
            "Ready",
            "True" if is_ready else "False",
            "QuorumReady" if is_ready else phase,
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
    if quorum is None:
        conds.append(
            condition(
                "QuorumObserved",
                "Unknown",
                "QuorumNotObservable",
                "the node does not answer DescribeQuorum yet",
                generation=generation,
                now=now,
                previous=prev_conds,
            )
        )
    else:
        conds.append(
            condition(
                "QuorumObserved",
                "True",
                "DescribeQuorum",
                f"leader {quorum.leader_id} in epoch {quorum.leader_epoch}",
                generation=generation,
                now=now,
                previous=prev_conds,
            )
        )
        status.update(
            {
                "clusterId": quorum.cluster_id,
                "leader": quorum.leader_id,
                "epoch": quorum.leader_epoch,
                "highWatermark": quorum.high_watermark,
                "voters": [{"id": v.id, "directoryId": v.directory_id} for v in quorum.voters],
                "observers": [
                    {"id": v.id, "directoryId": v.directory_id} for v in quorum.observers
                ],
            }
        )
    status["conditions"] = conds
    return status


def differs(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether writing `new` would change the stored status (None values mean absent)."""
    old = old or {}
    return any(old.get(k) != v for k, v in new.items())

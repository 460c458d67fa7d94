"""Pod placement and identity: `spec.podTemplate` rendered into the StatefulSet's pod template,
the default soft spread of the voters, and why a pod cannot be scheduled.

Role: `render` applies the user's podTemplate (as Strimzi's `template.pod`: affinity,
tolerations, nodeSelector, topologySpreadConstraints, priorityClassName, labels, annotations,
securityContext, serviceAccountName) to the pod template builders.statefulset made.
`default_spread` is what a quorum gets when its podTemplate sets no topologySpreadConstraints:
at most one voter more per node (kubernetes.io/hostname) and per zone
(topology.kubernetes.io/zone) than on any other, whenUnsatisfiable ScheduleAnyway, so a
single-node or zone-less cluster still schedules every pod (a soft preference, as the
scheduler's own default spread, but counted over this quorum's pods only). A user's own
topologySpreadConstraints replace the default whole. `unschedulable` reads a Pending pod's
PodScheduled condition: the scheduler writes the same message there as in its
FailedScheduling Event.

Invariants: pure (no IO); the operator's own pod labels (the selector), its annotations (the
config hash) and the volumes and containers are never overridden by the podTemplate (the CRD
refuses the selector label keys; annotations the operator writes win); the user's
securityContext is merged over the default (runAsNonRoot, runAsUser 1000, fsGroup 1000) key by
key; nothing is written when the podTemplate is empty except the default spread.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from metaquorum_operator.model import Names

HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
# podTemplate fields copied into the pod spec as they are (the CRD types each of them).
POD_SPEC_FIELDS = (
    "affinity",
    "tolerations",
    "nodeSelector",
    "priorityClassName",
    "serviceAccountName",
)


def default_spread(names: Names) -> list[dict[str, Any]]:
    """The soft spread of this quorum's pods across nodes, then zones (docs/operator.md)."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": names.selector_labels()},
        }
        for key in (HOSTNAME_KEY, ZONE_KEY)
    ]


def render(
    template: dict[str, Any], pod_template: Mapping[str, Any], names: Names
) -> dict[str, Any]:
    """`template` (a StatefulSet's spec.template) with the podTemplate applied; a new dict."""
    out = copy.deepcopy(template)
    meta, spec = out.setdefault("metadata", {}), out.setdefault("spec", {})
    user = copy.deepcopy(dict(pod_template))
    labels = user.get("labels") or {}
    if labels:
        meta["labels"] = {**labels, **meta.get("labels", {})}
    annotations = user.get("annotations") or {}
    if annotations:
        meta["annotations"] = {**annotations, **meta.get("annotations", {})}
    for key in POD_SPEC_FIELDS:
        if user.get(key):
            spec[key] = user[key]
    spread = user.get("topologySpreadConstraints")
    spec["topologySpreadConstraints"] = spread if spread else default_spread(names)
    security = user.get("securityContext")
    if security:
        spec["securityContext"] = {**spec.get("securityContext", {}), **security}
    return out


UNSCHEDULABLE_FIX = (
    "fix spec.podTemplate (nodeSelector, affinity, tolerations, topologySpreadConstraints)"
    " or the nodes"
)
UNBOUND_FIX = (
    "its PVC is not bound: check spec.storage.storageClassName, that the StorageClass exists"
    " and that its provisioner runs (kubectl describe pvc)"
)


def fix_for(message: str) -> str:
    """What to do about a pod the scheduler cannot place, from its message: an unbound PVC is a
    storage problem, anything else one of placement."""
    return UNBOUND_FIX if "PersistentVolumeClaim" in message else UNSCHEDULABLE_FIX


def unschedulable(conditions: list[Any] | None) -> str | None:
    """The scheduler's reason a pod is not placed (its PodScheduled condition False with
    reason Unschedulable: the message of its FailedScheduling Event), or None."""
    for c in conditions or []:
        if (
            getattr(c, "type", None) == "PodScheduled"
            and getattr(c, "status", None) == "False"
            and getattr(c, "reason", None) == "Unschedulable"
        ):
            return str(getattr(c, "message", None) or "no node satisfies the pod's placement")
    return None

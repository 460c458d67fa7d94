"""Volume growth: raising spec.storage.size grows each pod's PVC where its StorageClass allows
expansion, and says clearly where it does not.

Role: `plan` is pure: the spec's size, the quorum's PVCs (`Claim`, read by kube.Kube.claims)
and whether each StorageClass has allowVolumeExpansion -> which PVCs to patch (their
spec.resources.requests.storage raised to the spec's size) and the `VolumesResized` condition:
True/AsRequested once every PVC's capacity is at least the spec's size; False/Resizing while
a patched PVC waits for its driver (FileSystemResizePending: the driver grows the filesystem
when the pod restarts; the planner's roll does that, leader last, once the condition has
lasted CatchUp.fs_resize_grace_ms: rolls.py, FileSystemResize); False/ExpansionNotAllowed naming
the PVCs, their class and the fix. handlers.py executes the patches (Event VolumeResizing) and
posts a Warning Event when ExpansionNotAllowed appears.

Why PVCs only: a StatefulSet's volumeClaimTemplates are immutable. The operator keeps the
template it created (the size the quorum was created with) and patches every PVC instead,
including a PVC the StatefulSet creates later from the old template (a scale-up), on the next
reconcile. The alternative, deleting the StatefulSet with orphan propagation and creating it
again with the new template (as Strimzi's StatefulSet era did), leaves the pods without a
controller for a moment and gains nothing here: the size of a PVC is what counts.

Invariants: pure (no IO); never asks to shrink a PVC (the CRD refuses a smaller
spec.storage.size: x-kubernetes-validations transition rule); sizes compare as quantities.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kubernetes.utils import parse_quantity

CONDITION = "VolumesResized"


@dataclass(frozen=True, slots=True)
class Claim:
    """One PVC of the quorum: its request, its capacity (None before it is bound), its class,
    and whether it waits for the filesystem to be grown (FileSystemResizePending)."""

    name: str
    requested: str
    capacity: str | None
    storage_class: str | None
    fs_resize_pending: bool = False


@dataclass(frozen=True, slots=True)
class VolumePlan:
    grow: tuple[str, ...]  # PVCs whose request is to be raised to the spec's size
    status: str
    reason: str
    message: str


def _q(text: str | None) -> Decimal:
    return Decimal(parse_quantity(text)) if text else Decimal(0)  # type: ignore[no-untyped-call]


def plan(size: str, claims: Sequence[Claim], expandable: Mapping[str | None, bool]) -> VolumePlan:
    want = _q(size)
    grow: list[str] = []
    refused: list[Claim] = []
    waiting: list[str] = []
    for c in sorted(claims, key=lambda c: c.name):
        if _q(c.requested) < want:
            if expandable.get(c.storage_class, False):
                grow.append(c.name)
                waiting.append(f"{c.name}: {c.capacity or c.requested} -> {size}")
            else:
                refused.append(c)
        elif c.capacity is not None and _q(c.capacity) < want:
            what = "filesystem resize pending" if c.fs_resize_pending else "the driver resizing"
            waiting.append(f"{c.name}: {c.capacity} -> {size} ({what})")
    if refused:
        classes = sorted({c.storage_class or "(none)" for c in refused})
        names = ", ".join(c.name for c in refused)
        message = (
            f"spec.storage.size {size}: StorageClass {', '.join(classes)} does not allow volume"
            f" expansion (allowVolumeExpansion is not true), so {names} stay at"
            f" {refused[0].requested}: set allowVolumeExpansion: true on the class if its"
            " driver can expand volumes (the PVCs then grow), or move the quorum to a class"
            " that can"
        )
        return VolumePlan(tuple(grow), "False", "ExpansionNotAllowed", message)
    if waiting:
        pending = any(c.fs_resize_pending for c in claims)
        hint = (
            "; the driver grows the filesystem when the pod restarts: the operator restarts"
            " each such pod, leader last, once its PVC has been FileSystemResizePending for"
            " METAQUORUM_FS_RESIZE_GRACE_MS (Event FileSystemResize)"
            if pending
            else ""
        )
        return VolumePlan(tuple(grow), "False", "Resizing", "growing: " + "; ".join(waiting) + hint)
    return VolumePlan((), "True", "AsRequested", f"every PVC has at least {size}")

"""Volume growth at each reconcile: the IO around volumes.plan.

Role: read the quorum's PVCs and their StorageClasses (kube.Kube), raise the request of those
volumes.plan names (Event VolumeResizing per PVC), post a Warning VolumeExpansionNotAllowed when
a class cannot expand (once per message: not again while the condition's message is the same),
and return the VolumesResized condition for the status (handlers.py adds it; not run while the
quorum is paused).

Invariants: never shrinks a PVC nor touches one of another class than the plan says; the
condition's lastTransitionTime moves only when its status does (status.condition).
"""

from __future__ import annotations

import datetime
from typing import Any

import kopf

from metaquorum_operator import volumes
from metaquorum_operator.kube import Kube
from metaquorum_operator.model import Names, QuorumSpec
from metaquorum_operator.status import condition


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def grow_volumes(
    kube: Kube,
    body: kopf.Body,
    names: Names,
    spec: QuorumSpec,
    replicas: int,
    *,
    previous: list[dict[str, Any]],
    generation: int,
) -> dict[str, Any]:
    """Volume growth (volumes.py): patch the PVCs below spec.storage.size whose class can
    expand (Event VolumeResizing), Warn when one cannot (once per message); returns the
    VolumesResized condition."""
    claims = kube.claims(names, replicas)
    classes = {c.storage_class: kube.expandable(c.storage_class) for c in claims}
    step = volumes.plan(spec.storage_size, claims, classes)
    for claim in step.grow:
        kube.resize_claim(names, claim, spec.storage_size)
        message = f"{claim}: request raised to {spec.storage_size}"
        kopf.event(body, type="Normal", reason="VolumeResizing", message=message)
    old = next((c for c in previous if c.get("type") == volumes.CONDITION), {})
    if step.reason == "ExpansionNotAllowed" and old.get("message") != step.message:
        kopf.warn(body, reason="VolumeExpansionNotAllowed", message=step.message)
    return condition(
        volumes.CONDITION,
        step.status,
        step.reason,
        step.message,
        generation=generation,
        now=_now(),
        previous=previous,
    )

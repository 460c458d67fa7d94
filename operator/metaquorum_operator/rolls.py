"""Which pods a roll restarts, and why: the pod template changed, the image changed, a manual
roll was asked, or a volume waits for a restart to grow its filesystem.

Role: pure helpers of the planner's roll rule (planner.py, rule 9). A pod is due for a restart
when it runs an old revision of the StatefulSet's pod template (ImageChanged when its node
image differs from the spec's, ConfigChanged for any other template change: spec.config,
resources, ports, TLS settings), when it carries the annotation metaquorum.dev/manual-roll:
"true" itself (deleting it removes the annotation: the new pod comes from the template), or
when a manual roll of the whole quorum (the same annotation on the MetadataQuorum) still has to
restart it. A quorum-wide roll restarts the pods that existed when the operator first saw the
annotation, each once: their uids (`Progress.manual_roll`, kept in status.manualRoll across
operator restarts); a pod recreated for any reason since then has a new uid and counts as
restarted. FileSystemResize: the pod's PVC has been FileSystemResizePending for
`grace_ms` (CatchUp.fs_resize_grace_ms) since before the pod was created (ObservedPod.
fs_resize_pending_ms): its driver grew the volume but cannot grow a mounted filesystem, and
does so when the volume is mounted again; a pod created after the condition appeared mounted
the grown volume and is not restarted for it (so one restart per pod, and none where the driver
expands online and clears the condition first).

Invariants: pure (no IO); the causes are the fixed set actions.RESTART_CAUSES.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from metaquorum_operator.actions import RestartCause
from metaquorum_operator.membership import Progress
from metaquorum_operator.model import MANUAL_ROLL_ANNOTATION, Controls
from metaquorum_operator.observed import Observed, ObservedPod


def live_uids(observed: Observed) -> frozenset[str]:
    """The pods a quorum-wide manual roll asked now would restart."""
    return frozenset(p.uid for p in observed.pods if not p.terminating and p.uid)


def roll_uids(controls: Controls, progress: Progress, observed: Observed) -> frozenset[str]:
    """The pods (uids) the quorum-wide manual roll still has to restart."""
    if not controls.manual_roll:
        return frozenset()
    if progress.manual_roll is None:  # not started yet: every pod there now
        return live_uids(observed)
    return progress.manual_roll


def restart_cause(
    pod: ObservedPod,
    image: str,
    update_revision: str | None,
    manual: frozenset[str],
    *,
    now_ms: int = 0,
    grace_ms: int | None = None,
) -> tuple[RestartCause, str] | None:
    """Why `pod` must be restarted (cause, one line), or None. FileSystemResize only with
    `grace_ms` (the clock `now_ms`)."""
    if update_revision and pod.revision != update_revision:
        if pod.image is not None and pod.image != image:
            return "ImageChanged", f"{pod.name} runs image {pod.image}, the spec asks for {image}"
        return "ConfigChanged", f"{pod.name} runs an old revision of the pod template"
    if pod.manual_roll:
        return "ManualRoll", f"{pod.name} carries the annotation {MANUAL_ROLL_ANNOTATION}"
    if pod.uid and pod.uid in manual:
        return "ManualRoll", f"manual roll of the quorum ({MANUAL_ROLL_ANNOTATION}): {pod.name}"
    since = pod.fs_resize_pending_ms
    if grace_ms is not None and since is not None and now_ms - since >= grace_ms:
        return "FileSystemResize", (
            f"the volume of {pod.name} has waited {(now_ms - since) // 1000} s in"
            " FileSystemResizePending: its driver grows the filesystem when the pod restarts"
        )
    return None


def due(
    pods: Sequence[ObservedPod],
    want: tuple[str, str | None, frozenset[str]],
    leader_id: int,
    *,
    now_ms: int,
    grace_ms: int,
) -> list[tuple[ObservedPod, RestartCause, str]]:
    """The pods due for a restart with their cause and reason, in roll order: highest ordinal
    first, the leader last. `want`: the spec's image, the StatefulSet's update revision and the
    uids a quorum-wide manual roll still has to restart."""
    image, update_revision, manual = want
    found = [
        (pod, *cause)
        for pod in pods
        if (
            cause := restart_cause(
                pod, image, update_revision, manual, now_ms=now_ms, grace_ms=grace_ms
            )
        )
        is not None
    ]
    return sorted(found, key=lambda d: (d[0].ordinal == leader_id, -d[0].ordinal))


def roll_done(controls: Controls, progress: Progress, observed: Observed) -> bool:
    """A quorum-wide manual roll was asked and none of its pods is left to restart."""
    manual = roll_uids(controls, progress, observed)
    return controls.manual_roll and not (manual & live_uids(observed))


def roll_waits(controls: Controls, observed: Observed) -> bool:
    """A manual roll was asked (on the MetadataQuorum or a pod)."""
    return controls.manual_roll or any(p.manual_roll for p in observed.pods)


def manual_roll_progress(progress: Progress, controls: Controls, observed: Observed) -> Progress:
    """A quorum-wide manual roll starts (the pods there now) when first seen while not paused,
    loses each pod once it is gone (restarted), and is forgotten once the annotation is."""
    if not controls.manual_roll:
        roll = None
    elif progress.manual_roll is None:
        roll = None if controls.paused else live_uids(observed)
    else:
        roll = progress.manual_roll & frozenset(p.uid for p in observed.pods)
    return (
        progress
        if roll == progress.manual_roll
        else dataclasses.replace(progress, manual_roll=roll)
    )

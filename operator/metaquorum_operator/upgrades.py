"""Version upgrades: the skew rule, a roll stalled on a bad image, and the upgrade's status.

Role: pure helpers of the planner (planner.py) and the status (status.py) for a change of
spec.image. The roll itself is the planner's OnDelete roll (rule 9, rolls.py: one pod at a
time, highest ordinal first, the leader last after it resigns, each only when every pod is
ready and the others are caught up); a change of spec.image back mid-roll is rolled back the
same way (the pods on the abandoned image are then the ones due). This module adds:

- The skew rule (`skew_problem`): the versions every node reports (/status `version`,
  node/metaquorum/runtime/version.py; with spec.version, the version the spec's image is
  declared to run) must be of one major version and at most SKEW_MINORS (1) minor version
  apart; and none below the first version that supports the finalized kraft.version
  (KRAFT_MIN_VERSION: kraft.version 1, KIP-853's dynamic quorum, needs 0.1.0): the data cannot
  be read by an older node. A skew outside the rule stops the roll: Refused, code VersionSkew.
- A stalled roll (`stalled`): a pod on the current pod template that does not start (a
  container waiting in CrashLoopBackOff / ImagePullBackOff ..., or restarted after failing)
  while another pod runs another image: Refused, code UpgradeStalled, naming the pod and the
  fix. Nothing else is deleted meanwhile (the roll deletes only when every pod is ready), so a
  bad image never takes a second pod down.
- The resume (`resume`): once the spec is fixed, the pod left down on an old revision of the
  template (the only pod down) is deleted so the StatefulSet recreates it on the fixed one;
  deleting a pod that is already down takes no second pod down.
- `versions_status` (status.versions) and `upgrading_condition` (condition Upgrading).

Invariants: pure (no IO, no clock); a version that does not parse (e.g. a build's local tag)
is never refused for skew, only reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from metaquorum_operator.actions import Action, DeletePod, Refused, RestartCause
from metaquorum_operator.model import QuorumSpec
from metaquorum_operator.observed import Observed, ObservedPod, ObservedQuorum

SKEW_MINORS = 1
# The first node version that reads a log of each kraft.version (0: static voters; 1: KIP-853's
# VotersRecord and directory ids).
KRAFT_MIN_VERSION: Mapping[int, tuple[int, int, int]] = {0: (0, 0, 0), 1: (0, 1, 0)}
# container waiting reasons that mean "this pod will not start by itself"
STALL_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
STALLED, SKEW = "UpgradeStalled", "VersionSkew"
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """'0.2.0' -> (0, 2, 0); '1.3' -> (1, 3, 0); a pre-release or build suffix is ignored;
    None when it does not start with major.minor."""
    m = _VERSION.match(text.strip())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def skew_problem(versions: Mapping[str, str], kraft_version: int | None) -> str | None:
    """The skew rule over `versions` (who -> version, e.g. pod or "spec.version"): one line
    naming the offending pair, or None when they may run together."""
    parsed = {who: v for who, raw in versions.items() if (v := parse_version(raw)) is not None}
    if kraft_version is not None and kraft_version in KRAFT_MIN_VERSION:
        floor = KRAFT_MIN_VERSION[kraft_version]
        for who, v in sorted(parsed.items()):
            if v < floor:
                return (
                    f"{who} is at {versions[who]}, older than {'.'.join(map(str, floor))}, the"
                    f" first version that reads kraft.version {kraft_version} (the finalized"
                    " one): a downgrade the data cannot take"
                )
    if len(parsed) < 2:
        return None
    lo = min(parsed, key=lambda w: (parsed[w], w))
    hi = max(parsed, key=lambda w: (parsed[w], w))
    a, b = parsed[lo], parsed[hi]
    if a[0] != b[0] or b[1] - a[1] > SKEW_MINORS:
        return (
            f"{lo} is at {versions[lo]} and {hi} at {versions[hi]}: more than {SKEW_MINORS} minor"
            " version apart (or another major); upgrade one minor version at a time"
        )
    return None


def pod_versions(observed: Observed, quorum: ObservedQuorum | None) -> dict[str, str]:
    """pod name -> the version its node reports (live pods whose /status answered)."""
    if quorum is None:
        return {}
    return {
        p.name: v
        for p in observed.pods
        if not p.terminating and (v := quorum.version_of(p.ordinal)) is not None
    }


def skew(spec: QuorumSpec, observed: Observed, quorum: ObservedQuorum | None) -> Action | None:
    """Refused (VersionSkew) when the running versions, with spec.version when declared, break
    the skew rule; None otherwise."""
    versions = pod_versions(observed, quorum)
    if spec.version:
        versions["spec.version"] = spec.version
    problem = skew_problem(versions, quorum.kraft_version if quorum else None)
    if problem is None:
        return None
    return Refused(
        f"version skew refused: {problem}; set spec.image (and spec.version) back to what the"
        " running pods have, or to a version within the rule",
        code=SKEW,
    )


def _other_images(pods: Iterable[ObservedPod], pod: ObservedPod) -> list[str]:
    return sorted({p.image for p in pods if p.name != pod.name and p.image and not p.terminating})


def stalled(spec: QuorumSpec, observed: Observed) -> Refused | None:
    """A pod on the current template that does not start while another pod runs another image
    (a roll in progress): Refused (UpgradeStalled) naming it and the fix."""
    sts = observed.statefulset
    if sts is None:
        return None
    for p in sorted(observed.pods, key=lambda p: p.ordinal):
        if p.terminating or p.ready or p.failing is None:
            continue
        if sts.update_revision and p.revision != sts.update_revision:
            continue
        others = [i for i in _other_images(observed.pods, p) if i != p.image]
        if not others:
            continue
        return Refused(
            f"{p.name} does not become ready on image {p.image} ({p.failing}); the roll stops"
            f" here, no other pod is restarted: fix spec.image, or set it back to"
            f" {', '.join(others)} to roll back, and the operator resumes",
            code=STALLED,
        )
    return None


def resume(spec: QuorumSpec, observed: Observed) -> DeletePod | None:
    """The spec was fixed: the one pod down, failing on an old revision of the pod template, is
    deleted (recreated on the current one). Only when it is the only pod down."""
    sts = observed.statefulset
    if sts is None or not sts.update_revision or any(p.terminating for p in observed.pods):
        return None
    if len(observed.pods) != sts.replicas:
        return None
    down = [p for p in observed.pods if not p.ready]
    if len(down) != 1:
        return None
    p = down[0]
    if p.failing is None or p.revision == sts.update_revision:
        return None
    cause: RestartCause = (
        "ImageChanged" if p.image is not None and p.image != spec.image else "ConfigChanged"
    )
    return DeletePod(
        p.name,
        f"{p.name} is down ({p.failing}) on an old revision of the pod template: restarting it"
        f" on the current one (image {spec.image})",
        cause,
    )


def versions_status(
    spec: QuorumSpec, observed: Observed, quorum: ObservedQuorum | None
) -> list[dict[str, Any]]:
    """status.versions: per live pod, its image, the version its node reports, and whether it
    runs the spec's image."""
    out: list[dict[str, Any]] = []
    for p in sorted(observed.pods, key=lambda p: p.ordinal):
        if p.terminating:
            continue
        row: dict[str, Any] = {
            "pod": p.name,
            "image": p.image or "",
            "current": p.image == spec.image,
        }
        v = quorum.version_of(p.ordinal) if quorum is not None else None
        if v is not None:
            row["version"] = v
        out.append(row)
    return out


def upgrading_condition(
    spec: QuorumSpec, observed: Observed, quorum: ObservedQuorum | None, action: Action
) -> tuple[str, str, str]:
    """(status, reason, message) of the Upgrading condition: True while a live pod runs another
    image than spec.image (RollingImage, or UpgradeStalled / VersionSkew when the roll
    stopped), False (UpToDate) when every pod runs it."""
    live = [p for p in observed.pods if not p.terminating]
    old = sorted(p.name for p in live if p.image is not None and p.image != spec.image)
    if not old:
        return "False", "UpToDate", f"every pod runs {spec.image}"
    if isinstance(action, Refused) and action.code in (STALLED, SKEW):
        return "True", action.code, action.reason
    on = len(live) - len(old)
    versions = pod_versions(observed, quorum)
    shown = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    return (
        "True",
        "RollingImage",
        f"{on} of {len(live)} pods run {spec.image}; still to roll: {', '.join(old)}"
        + (f"; versions: {shown}" if shown else ""),
    )

"""MetadataQuorum status from observation: phase, conditions, replicas, the live quorum.

Role: `compute_status` is pure: what the operator observed (objects, pods, the quorum when it can
describe it), the action the planner chose and the operator's progress -> the status to write.
Status is a cache of observation; the things read back from it are `pendingOperation` and
`manualRoll` (the pods a manual roll has still to restart), so an operator restarted mid-change
resumes them (handlers.progress_from_status).

Conditions (metav1.Condition shape, each with observedGeneration; as etcd-operator names them):
- `Available`: the leader answered DescribeQuorum and more than half of the voters are caught up
  (reason QuorumAvailable); False with NoLeader, VotersLagging, QuorumUnreachable (the admin
  client's one-line error), or Unknown/NotObserved before the StatefulSet exists.
- `Progressing`: True while the planner has something to do (reason: the step, e.g. AddingVoter,
  RemovingVoter, Scaling, Rolling, Applying, Waiting); False/Converged when it has not.
- `ReconciliationPaused`: True (PausedByAnnotation) while annotation
  metaquorum.dev/pause-reconciliation is "true", with what waits in the message; False
  (Reconciling) otherwise. Progressing is False (reason ReconciliationPaused) while paused.
- `Upgrading` (upgrades.py): True while a pod runs another image than spec.image (RollingImage;
  UpgradeStalled or VersionSkew when the roll stopped), False (UpToDate) otherwise.
  `versions` lists each pod's image and the version its node reports; `kraftVersion` is the
  finalized kraft.version. `membershipProblems` (members.py): dangling and duplicate members.
- `Degraded`: True when a pod's volume is refused (VolumeRefused), a roll stopped (UpgradeStalled,
  VersionSkew: upgrades.py), a majority of the voters is lost (QuorumLost), a pod stays Pending
  because no node satisfies its placement (PodUnschedulable, with the scheduler's message and the
  fix; placement.py) or a voter has not been
  caught up for CatchUp.rejoin_bound_ms (VoterNotCaughtUp: a lost pod that does not rejoin); False
  with CatchingUp while a voter is behind for less, AsExpected otherwise.
- `QuorumLost`: True (MajorityLost) while the planner returns QuorumLost (quorum_lost.py: a
  majority of the voters unreachable or came back empty; the message names them and the
  survivors), also while paused; True (Recovering) with the step while a recovery asked by
  metaquorum.dev/recover-from is under way and no leader answers (recovery.py); False
  (QuorumIntact) otherwise.
Printer columns (`kubectl get metadataquorums`): `readyVoters` ("2/3": voters caught up with the
leader / spec.replicas, 0/N without a leader) and `operation` (`operation_of`: the voter change
in flight, else what the planner chose, e.g. "Rolling q-2"; Idle when converged).
Voters and observers are the leader's answer of this reconcile as {id, directoryId, lag} (lag in
records behind the leader, absent when unknown), absent when the quorum cannot be described.
A condition's lastTransitionTime changes only when its status does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from metaquorum_operator import members, upgrades
from metaquorum_operator.actions import (
    Action,
    AddVoter,
    Apply,
    Converged,
    DeletePod,
    EndManualRoll,
    EndRecovery,
    Paused,
    QuorumLost,
    Recover,
    Refused,
    RemoveVoter,
    ResignLeader,
    ScaleStatefulSet,
    UpgradeKraftVersion,
)
from metaquorum_operator.membership import CatchUp, Progress, caught_up, healthy_keys, lag
from metaquorum_operator.model import PAUSE_ANNOTATION, Names, QuorumSpec
from metaquorum_operator.observed import Observed, ObservedQuorum, ReplicaState
from metaquorum_operator.placement import fix_for

REFUSED_REASON = "VolumeRefused"
UNSCHEDULABLE_REASON = "PodUnschedulable"
PAUSED_CONDITION = "ReconciliationPaused"
LOST_CONDITION = "QuorumLost"


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


def step_reason(action: Action) -> str:
    if isinstance(action, Refused):
        return action.code
    return {
        AddVoter: "AddingVoter",
        RemoveVoter: "RemovingVoter",
        ScaleStatefulSet: "Scaling",
        DeletePod: "Rolling",
        ResignLeader: "Rolling",
        EndManualRoll: "Rolling",
        Apply: "Applying",
        UpgradeKraftVersion: "Migrating",
        QuorumLost: LOST_CONDITION,
        Recover: "Recovering",
        EndRecovery: "Recovered",
        Converged: "Converged",
        Paused: PAUSED_CONDITION,
    }.get(type(action), "Waiting")


def phase_of(
    spec: QuorumSpec,
    observed: Observed,
    quorum: ObservedQuorum | None,
    action: Action,
    degraded: bool,
) -> str:
    sts = observed.statefulset
    if sts is None:
        return "Pending"
    if isinstance(action, Paused):
        return "Paused"
    if isinstance(action, Converged):
        return "Running"
    if degraded:
        return "Degraded"
    if not observed.formed and (quorum is None or not quorum.has_leader):
        return "Creating"
    return "Scaling"


def replica_fields(r: ReplicaState, quorum: ObservedQuorum) -> dict[str, Any]:
    out: dict[str, Any] = {"id": r.id}
    if r.directory_id:
        out["directoryId"] = r.directory_id
    behind = lag(r, quorum)
    if behind is not None:
        out["lag"] = behind
    return out


def quorum_fields(quorum: ObservedQuorum) -> dict[str, Any]:
    """The status fields DescribeQuorum fills."""
    return {
        "leader": quorum.leader_id,
        "epoch": quorum.leader_epoch,
        "highWatermark": quorum.high_watermark,
        "voters": [replica_fields(v, quorum) for v in quorum.voters],
        "observers": [replica_fields(o, quorum) for o in quorum.observers],
        "voterIds": ",".join(str(v.id) for v in sorted(quorum.voters, key=lambda v: v.id)),
    }


def pending_fields(progress: Progress | None) -> dict[str, Any] | None:
    p = progress.pending if progress else None
    if p is None:
        return None
    out: dict[str, Any] = {
        "kind": p.kind,
        "id": p.key.id,
        "step": "committing" if p.reflected_at >= 0 else "issued",
        "issuedAtMs": p.issued_ms,
    }
    if p.key.directory_id:
        out["directoryId"] = p.key.directory_id
    return out


def operation_of(action: Action, progress: Progress | None) -> str:
    """A few words on what the operator is doing now (the Operation column)."""
    pending = progress.pending if progress else None
    if pending is not None:
        return f"{'AddVoter' if pending.kind == 'add' else 'RemoveVoter'} {pending.key.id}"
    if isinstance(action, Converged):
        return "Idle"
    if isinstance(action, Paused):
        return "Paused"
    if isinstance(action, AddVoter | RemoveVoter):
        return f"{type(action).__name__} {action.key.id}"
    if isinstance(action, DeletePod | ResignLeader):
        return f"Rolling {action.name}"
    if isinstance(action, ScaleStatefulSet):
        return f"Scaling to {action.replicas}"
    if isinstance(action, Apply):
        return f"Applying {action.key}"
    return step_reason(action)


def manual_roll_fields(progress: Progress | None) -> dict[str, Any] | None:
    """The pods a quorum-wide manual roll has still to restart (read back after a restart)."""
    roll = progress.manual_roll if progress else None
    return {"podUids": sorted(roll)} if roll else None


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
    progress: Progress | None = None,
    settings: CatchUp | None = None,
) -> dict[str, Any]:
    settings = settings or CatchUp()
    prev = previous or {}
    prev_conds: Sequence[Mapping[str, Any]] = prev.get("conditions") or []
    sts = observed.statefulset

    def cond(ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return condition(
            ctype, status, reason, message, generation=generation, now=now, previous=prev_conds
        )

    led = quorum is not None and quorum.has_leader
    lagging = (
        [v.id for v in quorum.voters if not caught_up(v, quorum, settings)]
        if quorum is not None and led
        else []
    )
    healthy = healthy_keys(quorum, settings) if quorum is not None and led else frozenset()
    healthy_voters = [v for v in quorum.voters if v.key in healthy] if quorum is not None else []
    bound = settings.rejoin_bound_ms
    stuck = (progress or Progress()).lagging_longer_than(bound) if led else []
    lost = lost_of(action)
    if isinstance(action, Refused):
        degraded = cond("Degraded", "True", action.code, action.reason)
    elif lost is not None:
        degraded = cond("Degraded", "True", LOST_CONDITION, lost.reason)
    elif unplaced := [p for p in observed.pods if p.unschedulable and not p.terminating]:
        what = "; ".join(
            f"{p.name}: {p.unschedulable}: {fix_for(p.unschedulable or '')}" for p in unplaced
        )
        degraded = cond("Degraded", "True", UNSCHEDULABLE_REASON, f"pods not scheduled: {what}")
    elif stuck:
        ids = ", ".join(str(k.id) for k in stuck)
        degraded = cond(
            "Degraded",
            "True",
            "VoterNotCaughtUp",
            f"voters not caught up for {bound // 1000} s or more: {ids}",
        )
    elif lagging:
        ids = ", ".join(str(i) for i in lagging)
        degraded = cond("Degraded", "False", "CatchingUp", f"voters catching up: {ids}")
    else:
        degraded = cond("Degraded", "False", "AsExpected", "every voter is caught up")
    done = isinstance(action, Converged | Paused | QuorumLost)
    conds = [
        available_condition(quorum, quorum_error, sts is not None, settings, cond),
        cond(
            "Progressing",
            "False" if done else "True",
            step_reason(action),
            action.reason,
        ),
        degraded,
        paused_condition(action, cond),
        cond("Upgrading", *upgrades.upgrading_condition(spec, observed, quorum, action)),
        lost_condition(lost, cond, action if observed.recovery and not led else None),
    ]
    status: dict[str, Any] = {
        "phase": phase_of(spec, observed, quorum, action, degraded["status"] == "True"),
        "observedGeneration": generation,
        "replicas": sts.replicas if sts else 0,
        "readyReplicas": sts.ready_replicas if sts else 0,
        "labelSelector": names.label_selector(),
        "clusterId": cluster_id,
        "leader": None,
        "epoch": None,
        "highWatermark": None,
        "voters": None,
        "observers": None,
        "voterIds": None,
        "readyVoters": f"{len(healthy_voters)}/{spec.replicas}",
        "operation": operation_of(action, progress),
        "pendingOperation": pending_fields(progress),
        "manualRoll": manual_roll_fields(progress),
        "versions": upgrades.versions_status(spec, observed, quorum) or None,
        "kraftVersion": quorum.kraft_version if quorum is not None else None,
        "membershipProblems": members.problems(observed, quorum, spec.replicas) or None,
        "conditions": conds,
    }
    if quorum is not None and led:
        status.update(quorum_fields(quorum))
        status["clusterId"] = quorum.cluster_id or cluster_id
    return status


def lost_of(action: Action) -> QuorumLost | None:
    """The QuorumLost the planner returned, also when it is what a pause holds."""
    if isinstance(action, Paused):
        action = action.held
    return action if isinstance(action, QuorumLost) else None


def lost_condition(
    lost: QuorumLost | None, cond: Any, recovering: Action | None = None
) -> dict[str, Any]:
    """QuorumLost: True (MajorityLost) naming the voters lost, True (Recovering) with the
    recovery's step while one asked by metaquorum.dev/recover-from is under way (recovery.py),
    else False (QuorumIntact)."""
    if lost is not None:
        return dict(cond(LOST_CONDITION, "True", "MajorityLost", lost.reason))
    if recovering is not None:
        return dict(cond(LOST_CONDITION, "True", "Recovering", recovering.reason))
    return dict(
        cond(LOST_CONDITION, "False", "QuorumIntact", "no majority of the voters is known lost")
    )


def paused_condition(action: Action, cond: Any) -> dict[str, Any]:
    if isinstance(action, Paused):
        return dict(cond(PAUSED_CONDITION, "True", "PausedByAnnotation", action.reason))
    return dict(
        cond(
            PAUSED_CONDITION,
            "False",
            "Reconciling",
            f'the operator reconciles this quorum (annotation {PAUSE_ANNOTATION}: "true"'
            " pauses it)",
        )
    )


def available_condition(
    quorum: ObservedQuorum | None,
    error: str | None,
    exists: bool,
    settings: CatchUp,
    cond: Any,
) -> dict[str, Any]:
    if quorum is not None and quorum.has_leader:
        healthy = healthy_keys(quorum, settings)
        up = sum(1 for v in quorum.voters if v.key in healthy)
        message = (
            f"leader {quorum.leader_id} in epoch {quorum.leader_epoch}, {up} of "
            f"{len(quorum.voters)} voters caught up, high watermark {quorum.high_watermark}"
        )
        if 2 * up > len(quorum.voters):
            return dict(cond("Available", "True", "QuorumAvailable", message))
        return dict(cond("Available", "False", "VotersLagging", message))
    if quorum is not None:
        return dict(
            cond("Available", "False", "NoLeader", f"no leader (epoch {quorum.leader_epoch})")
        )
    if error and exists:
        return dict(cond("Available", "False", "QuorumUnreachable", error))
    return dict(cond("Available", "Unknown", "NotObserved", "the quorum has not been described"))


def differs(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether writing `new` would change the stored status (None values mean absent)."""
    old = old or {}
    return any(old.get(k) != v for k, v in new.items())

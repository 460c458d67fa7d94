"""What the operator tells users about its actions: Event reasons and one-line messages.

Role: pure helpers of handlers.py. `describe` is the one-line message of an executed action (also
its log line); `event_reason` its Event reason (a pod restart's is its cause: ConfigChanged,
ImageChanged, ManualRoll or FileSystemResize); `pause_event` the Event to post when
reconciliation was paused or resumed since the last status written.

Invariants: pure (no IO, no kopf); every reason is CamelCase, every message one line.
"""

from __future__ import annotations

from typing import Any

from metaquorum_operator import planner
from metaquorum_operator.model import (
    MANUAL_ROLL_ANNOTATION,
    PAUSE_ANNOTATION,
    RECOVER_FROM_ANNOTATION,
)
from metaquorum_operator.status import PAUSED_CONDITION


def pause_event(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of the Event to post when reconciliation was paused or resumed since
    the last status written, else None."""

    def paused(status: dict[str, Any]) -> bool:
        return any(
            c.get("type") == PAUSED_CONDITION and c.get("status") == "True"
            for c in status.get("conditions") or []
        )

    if paused(new) == paused(old):
        return None
    if paused(new):
        c = next(c for c in new["conditions"] if c["type"] == PAUSED_CONDITION)
        return "ReconciliationPaused", str(c["message"])
    return "ReconciliationResumed", (
        f'{PAUSE_ANNOTATION} removed or not "true": the operator reconciles again'
    )


def describe(action: planner.Action) -> str:
    if isinstance(action, planner.Apply):
        verb = "created" if action.create else "updated"
        m = action.manifest
        return f"{verb} {m['kind']} {m['metadata']['name']} ({action.reason})"
    if isinstance(action, planner.ScaleStatefulSet):
        return f"scaled StatefulSet to {action.replicas} replicas ({action.reason})"
    if isinstance(action, planner.DeletePod):
        return f"deleted pod {action.name} to restart it ({action.reason})"
    if isinstance(action, planner.EndManualRoll):
        return f"removed the annotation {MANUAL_ROLL_ANNOTATION} ({action.reason})"
    if isinstance(action, planner.EndRecovery):
        return f"removed the annotation {RECOVER_FROM_ANNOTATION} ({action.reason})"
    if isinstance(action, planner.ResignLeader):
        return f"asked leader {action.node_id} to resign epoch {action.epoch} ({action.reason})"
    if isinstance(action, planner.AddVoter):
        k = action.key
        return f"added voter {k.id} (directory {k.directory_id}) ({action.reason})"
    if isinstance(action, planner.RemoveVoter):
        k = action.key
        return f"removed voter {k.id} (directory {k.directory_id}) ({action.reason})"
    return action.reason


EVENT_REASONS: dict[type, str] = {
    planner.ScaleStatefulSet: "Scaled",
    planner.EndManualRoll: "ManualRollDone",
    planner.ResignLeader: "LeaderResigning",
    planner.AddVoter: "VoterAdded",
    planner.RemoveVoter: "VoterRemoved",
    planner.UpgradeKraftVersion: "KraftVersionUpgraded",
    planner.Recover: "RecoveringFromSurvivor",
    planner.EndRecovery: "RecoveryDone",
}


def event_reason(action: planner.Action) -> str:
    """The Event reason of an executed action; a pod restart's is its cause (ConfigChanged,
    ImageChanged, ManualRoll or FileSystemResize: actions.RESTART_CAUSES)."""
    if isinstance(action, planner.Apply):
        return "Created" if action.create else "Updated"
    if isinstance(action, planner.DeletePod):
        return action.cause
    return EVENT_REASONS.get(type(action), "Reconciled")

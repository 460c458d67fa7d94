"""The planner's actions: what one reconcile step decides to do, as frozen values.

Role: the vocabulary between the pure planner (planner.py, which re-exports every name here),
the step loop that executes actions (handlers.py, kube.py), the status (status.py) and the
Events. One action per planner call; `IDLE` actions change nothing and end a reconcile run.

Invariants: frozen, no IO; every action carries a one-line `reason` for Events and conditions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from metaquorum_operator.model import MANUAL_ROLL_ANNOTATION, PAUSE_ANNOTATION
from metaquorum_operator.observed import VoterKey


@dataclass(frozen=True, slots=True)
class Apply:
    """Create (`create=True`) or update one owned object to `manifest`."""

    key: str
    manifest: dict[str, Any]
    create: bool
    reason: str


@dataclass(frozen=True, slots=True)
class ScaleStatefulSet:
    replicas: int
    reason: str


# Why a pod is restarted (its Event's reason): the pod template changed (spec.config,
# resources, ports, TLS settings, pull policy), the node image changed, or the user asked with
# the annotation metaquorum.dev/manual-roll (on the MetadataQuorum or on the pod), or the pod's
# volume waits for a restart to grow its filesystem (its PVC FileSystemResizePending: the
# driver cannot grow a mounted filesystem; volumes.py).
RestartCause = Literal["ConfigChanged", "ImageChanged", "ManualRoll", "FileSystemResize"]
RESTART_CAUSES: tuple[RestartCause, ...] = (
    "ConfigChanged",
    "ImageChanged",
    "ManualRoll",
    "FileSystemResize",
)


@dataclass(frozen=True, slots=True)
class DeletePod:
    """Delete one pod so that the StatefulSet recreates it (a restart), for `cause`."""

    name: str
    reason: str
    cause: RestartCause = "ConfigChanged"


@dataclass(frozen=True, slots=True)
class EndManualRoll:
    """Every pod was restarted once: remove the annotation metaquorum.dev/manual-roll from the
    MetadataQuorum."""

    reason: str


@dataclass(frozen=True, slots=True)
class ResignLeader:
    """Ask the leader of `epoch` (node `node_id`, pod `name`) to resign before its pod is rolled:
    its node's POST /resign?epoch=N (it refuses when no longer the leader of that epoch)."""

    name: str
    node_id: int
    epoch: int
    reason: str


@dataclass(frozen=True, slots=True)
class AddVoter:
    """AddRaftVoter (KIP-853) of an observer caught up with the leader."""

    key: VoterKey
    reason: str


@dataclass(frozen=True, slots=True)
class RemoveVoter:
    """RemoveRaftVoter (KIP-853) of one voter."""

    key: VoterKey
    reason: str


@dataclass(frozen=True, slots=True)
class UpgradeKraftVersion:
    """UpdateFeatures kraft.version=1 to the leader (a static quorum becomes dynamic,
    migration.py)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Wait:
    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    """Something the operator will not do by itself (a pod's volume holds another cluster's data
    or a replaced directory); nothing changes, a Warning Event and the Degraded condition say
    why and how to fix it. `code` is the Degraded condition's reason: VolumeRefused, or
    upgrades.py's UpgradeStalled (a pod does not start on the new image) and VersionSkew."""

    reason: str
    code: str = "VolumeRefused"


@dataclass(frozen=True, slots=True)
class QuorumLost:
    """A majority of the voters is unreachable or came back empty (quorum_lost.py): the
    operator changes nothing — no object, no pod, no voter — and never wipes or re-bootstraps;
    the QuorumLost condition names the voters."""

    reason: str
    voters: tuple[int, ...] = ()
    lost: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Recover:
    """Recover the lost quorum from pod `pod` (recovery.py): write the ConfigMap `configmap`
    (its `recover-from` key: "<ordinal> <token>"), then delete the pod if its uid is `token`."""

    pod: str
    ordinal: int
    token: str
    configmap: dict[str, Any]
    reason: str


@dataclass(frozen=True, slots=True)
class EndRecovery:
    """The quorum has a leader and no recovery is under way: remove the annotation
    metaquorum.dev/recover-from, so that it never acts at a later lost majority without the user
    naming a survivor again (recovery.py)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Converged:
    reason: str = "all objects up to date, all replicas ready and voters"


@dataclass(frozen=True, slots=True)
class Paused:
    """Reconciliation is paused by the user: nothing is done. `held` is what the planner would
    do otherwise (Converged when nothing would be)."""

    held: Action
    roll_waits: bool = False  # a manual roll was asked and waits for the resume

    @property
    def reason(self) -> str:
        waiting = "" if isinstance(self.held, Converged) else f"; on resume: {self.held.reason}"
        roll = f"; the manual roll ({MANUAL_ROLL_ANNOTATION}) waits" if self.roll_waits else ""
        return (
            f'reconciliation paused by annotation {PAUSE_ANNOTATION}="true"{waiting}{roll}'
            f' (remove the annotation or set it to "false" to resume)'
        )


Action = (
    Apply
    | ScaleStatefulSet
    | DeletePod
    | EndManualRoll
    | ResignLeader
    | AddVoter
    | RemoveVoter
    | UpgradeKraftVersion
    | Wait
    | Refused
    | QuorumLost
    | Recover
    | EndRecovery
    | Converged
    | Paused
)
VOTER_CHANGES = (AddVoter, RemoveVoter)
# the actions that change nothing: the step loop stops at one
IDLE = (Wait, Refused, QuorumLost, Converged, Paused)

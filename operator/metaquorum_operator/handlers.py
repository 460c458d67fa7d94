"""kopf handlers: a level-triggered reconcile loop per MetadataQuorum.

Role: wire the pure planner to the cluster. One kopf timer per MetadataQuorum (every
RECONCILE_INTERVAL seconds, and at once when the object appears or the operator starts) runs
`reconcile`: observe the objects (kube.py) and the quorum (admin_quorum.py, observe.py:
DescribeQuorum through metaquorum.admin, in the timer's worker thread, bounded by a few seconds)
-> plan -> execute one action -> observe both again, up to MAX_STEPS actions, then write the
status computed from the last observation. A cluster id is generated once and kept in
spec.clusterId before any pod formats its volume. Voter changes (AddRaftVoter / RemoveRaftVoter)
are recorded as the pending change before they are sent and cleared when the leader answers (it
answers once the change is committed); the pending change is written to status.pendingOperation,
so an operator restarted mid-change resumes it (progress_from_status), and so is what a
quorum-wide manual roll has left (status.manualRoll; rolls.py). Every action is posted as a
Kubernetes Event on the MetadataQuorum (events.py: a restart's reason is its cause); a Warning
per membership problem when it first appears (members.py: PodNotInQuorum, VoterWithoutPod,
DuplicateIncarnation); one Warning is posted when Degraded turns True (VolumeRefused,
VoterNotCaughtUp: a lost pod not rejoining within the bound), and a Normal one when
reconciliation is paused or resumed (ReconciliationPaused / ReconciliationResumed). Volume
growth (volume_growth.py) runs after the steps: the PVCs below spec.storage.size are patched
where their class can expand, and the VolumesResized condition is added to the status. While
paused (annotation metaquorum.dev/pause-reconciliation: "true") the loop still observes the
objects and the quorum and writes the status, and does nothing else (no cluster id either).
Deletion is plain garbage collection through the controller ownerReferences (PVCs too when
spec.storage.deleteClaimsOnDelete); kopf's finalizer only stops the timer first.

Run: `kopf run --standalone --all-namespaces -m metaquorum_operator.handlers` (the chart's
Deployment does this). Invariants: kopf's own bookkeeping goes to annotations, never status (the
CRD's status schema is closed); status is written only when it changes.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import os
import random
import time
from collections.abc import Callable
from typing import Any, Protocol

import kopf
from kubernetes import client, config
from metaquorum.admin.client import AdminError

from metaquorum_operator import (
    backup_kube,
    events,
    members,
    metrics,
    observe,
    planner,
    rolls,
    volumes,
)
from metaquorum_operator.admin_quorum import AdminQuorum
from metaquorum_operator.kube import Kube
from metaquorum_operator.membership import ChangeKind, PendingChange, Progress, advance
from metaquorum_operator.model import (
    GROUP,
    PLURAL,
    VERSION,
    Controls,
    Names,
    OperatorConfig,
    Owner,
    QuorumSpec,
    new_cluster_id,
)
from metaquorum_operator.observed import Observed, VoterKey
from metaquorum_operator.status import compute_status, differs
from metaquorum_operator.tls_client import SecretTls, tls_status
from metaquorum_operator.volume_growth import grow_volumes

RECONCILE_INTERVAL = float(os.environ.get("METAQUORUM_RECONCILE_INTERVAL", "2"))
MAX_STEPS = 8
_state: dict[str, Any] = {}


def _api() -> client.ApiClient:
    api = _state.get("api")
    if api is None:
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config()  # type: ignore[no-untyped-call]
        api = _state["api"] = client.ApiClient()
    assert isinstance(api, client.ApiClient)
    return api


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="metaquorum.dev")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="metaquorum.dev")
    settings.persistence.finalizer = "metaquorum.dev/operator"
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = 60
    # With peering (the chart's operator.replicas > 1) the highest priority works: a random
    # one per process, so two replicas never tie (a tie would pause both).
    settings.peering.priority = random.SystemRandom().randint(1, 2**31 - 1)
    settings.peering.lifetime = int(os.environ.get("METAQUORUM_PEERING_LIFETIME", "60"))
    _state["operator"] = OperatorConfig.from_env()
    _api()
    if "metrics" not in _state:
        _state["metrics"] = metrics.serve()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _now_ms() -> int:
    return int(time.time() * 1000)


@kopf.timer(GROUP, VERSION, PLURAL, interval=RECONCILE_INTERVAL, initial_delay=0.0)
def reconcile(
    body: kopf.Body,
    meta: kopf.Meta,
    spec: kopf.Spec,
    status: kopf.Status,
    logger: logging.Logger | logging.LoggerAdapter[Any],
    **_: Any,
) -> None:
    if meta.get("deletionTimestamp"):
        return
    kube = Kube(_api())
    names = Names(name=str(meta["name"]), namespace=str(meta["namespace"]))
    quorum_spec = QuorumSpec.from_spec(dict(spec))
    controls = Controls.from_annotations(meta.get("annotations"))
    if not quorum_spec.cluster_id and not controls.paused:
        # Generated once, before any pod formats its volume, and kept in the spec.
        cluster_id = new_cluster_id()
        kube.set_cluster_id(names, cluster_id)
        kopf.event(body, type="Normal", reason="ClusterId", message=f"cluster id {cluster_id}")
        quorum_spec = dataclasses.replace(quorum_spec, cluster_id=cluster_id)
    desired = planner.Desired(
        spec=quorum_spec,
        names=names,
        owner=Owner(name=names.name, uid=str(meta["uid"])),
        operator=_state.get("operator") or OperatorConfig.from_env(),
        controls=controls,
    )
    memory: dict[tuple[str, str, str], Progress] = _state.setdefault("progress", {})
    key = (names.namespace, names.name, str(meta["uid"]))
    progress = memory.get(key) or progress_from_status(dict(status))

    stuck: metrics.Stuck = _state.setdefault("stuck", metrics.Stuck())
    where = (names.namespace, names.name)

    def done(action: planner.Action) -> None:
        stuck.stepped(where, _now_ms())
        metrics.ACTIONS.labels(type(action).__name__).inc()
        _post(body, action)
        logger.info("%s", events.describe(action))

    def failed(action: planner.Action, error: str) -> None:
        reason = {
            planner.ResignLeader: "ResignFailed",
            planner.UpgradeKraftVersion: "KraftVersionUpgradeFailed",
        }.get(type(action), "VoterChangeFailed")
        metrics.ERRORS.labels(reason).inc()
        kopf.warn(body, reason=reason, message=f"{events.describe(action)}: {error}")

    try:
        run = run_steps(
            kube,
            AdminQuorum(_secret_tls(kube)),
            desired,
            progress,
            on_action=done,
            on_failure=failed,
            clock=_now_ms,
        )
    except planner.NotOwned as e:
        metrics.ERRORS.labels("NotOwned").inc()
        kopf.warn(body, reason="NotOwned", message=str(e))
        raise kopf.TemporaryError(str(e), delay=30) from e
    memory[key] = run.progress
    metrics.RECONCILES.labels(type(run.action).__name__).inc()
    busy = not isinstance(run.action, planner.Converged | planner.Paused)
    metrics.OPERATION_STUCK.labels(*where).set(stuck.seconds(where, busy, _now_ms()))
    voters = metrics.VOTERS.labels(names.namespace, names.name)
    q = run.observation.quorum
    voters.set(len(q.voters) if q is not None and q.has_leader else float("nan"))
    generation = int(meta.get("generation") or 0)
    new = compute_status(
        desired.spec,
        names,
        generation=generation,
        observed=run.observed,
        quorum=run.observation.quorum,
        action=run.action,
        now=_now(),
        previous=dict(status),
        quorum_error=run.observation.error or None,
        cluster_id=quorum_spec.cluster_id,
        progress=run.progress,
        settings=desired.operator.catch_up,
    )
    new["tls"] = tls_status(quorum_spec)
    backup = backup_kube.reconcile(
        backup_kube.BackupKube(_api()),
        spec=dict(spec),
        quorum_spec=quorum_spec,
        names=names,
        owner=desired.owner,
        previous=dict(status),
        generation=generation,
        now=_now(),
        paused=controls.paused,
        post=lambda kind, reason, message: kopf.event(
            body, type=kind, reason=reason, message=message
        ),
    )
    new["backup"] = backup.fields if backup is not None else None
    if backup is not None:
        new["conditions"].append(backup.condition)
    previous = [dict(c) for c in status.get("conditions") or []]
    if not controls.paused and run.observed.statefulset is not None:
        replicas = run.observed.statefulset.replicas
        new["conditions"].append(
            grow_volumes(
                kube, body, names, quorum_spec, replicas, previous=previous, generation=generation
            )
        )
    else:  # paused: what was last seen stays
        new["conditions"] += [c for c in previous if c.get("type") == volumes.CONDITION]
    degraded = next(c for c in new["conditions"] if c["type"] == "Degraded")
    if degraded["status"] == "True" and _degraded_reason(status) != degraded["reason"]:
        kopf.warn(body, reason=degraded["reason"], message=degraded["message"])
    for problem in members.new_problems(
        status.get("membershipProblems"), new["membershipProblems"] or []
    ):
        kopf.warn(body, reason=problem["kind"], message=problem["message"])
    paused = events.pause_event(dict(status), new)
    if paused is not None:
        kopf.event(body, type="Normal", reason=paused[0], message=paused[1])
    if differs(new, dict(status)):
        kube.write_status(names, new)


def _secret_tls(kube: Kube) -> SecretTls:
    """One SecretTls per process: it keeps each Secret's context until the Secret changes."""
    found = _state.get("secret_tls")
    if found is None:
        found = _state["secret_tls"] = SecretTls(kube.core)
    assert isinstance(found, SecretTls)
    return found


def _degraded_reason(status: kopf.Status) -> str | None:
    for c in status.get("conditions") or []:
        if c.get("type") == "Degraded" and c.get("status") == "True":
            return str(c.get("reason"))
    return None


class Cluster(Protocol):
    """What the step loop needs from Kubernetes (kube.Kube; a model in the unit tests)."""

    def observe(self, names: Names) -> Observed: ...

    def execute(self, action: planner.Action, names: Names) -> None: ...


class Quorum(Protocol):
    """What the step loop needs from the quorum (AdminQuorum; a model in the unit tests)."""

    def describe(self, desired: planner.Desired, observed: Observed) -> observe.Observation: ...

    def change(
        self, action: planner.AddVoter | planner.RemoveVoter, desired: planner.Desired
    ) -> None: ...

    def resign(self, action: planner.ResignLeader, desired: planner.Desired) -> None: ...

    def upgrade_kraft_version(self, desired: planner.Desired) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class Run:
    action: planner.Action
    observed: Observed
    observation: observe.Observation
    progress: Progress


def run_steps(
    kube: Cluster,
    quorum: Quorum,
    desired: planner.Desired,
    progress: Progress,
    *,
    on_action: Callable[[planner.Action], None],
    on_failure: Callable[[planner.Action, str], None],
    clock: Callable[[], int],
) -> Run:
    """Observe (objects and quorum), plan, execute one action, observe both again: until the
    planner waits or is converged, a voter change fails, or MAX_STEPS actions ran."""
    settings = desired.operator.catch_up

    def look(progress: Progress) -> tuple[Observed, observe.Observation, Progress]:
        observed = kube.observe(desired.names)
        observation = quorum.describe(desired, observed)
        progress = rolls.manual_roll_progress(progress, desired.controls, observed)
        return observed, observation, advance(progress, observation.quorum, clock(), settings)

    observed, observation, progress = look(progress)
    action: planner.Action = planner.Converged()
    for _step in range(MAX_STEPS):
        action = planner.plan(desired, observed, observation.quorum, progress, observation.nodes)
        if isinstance(action, planner.IDLE):
            break
        if isinstance(action, planner.VOTER_CHANGES):
            kind: ChangeKind = "add" if isinstance(action, planner.AddVoter) else "remove"
            progress = dataclasses.replace(
                progress, pending=PendingChange(kind, action.key, issued_ms=clock())
            )
            try:
                quorum.change(action, desired)
            except AdminError as e:
                on_failure(action, str(e))
                observed, observation, progress = look(progress)
                break
            progress = dataclasses.replace(progress, pending=None)  # answered once committed
        elif isinstance(action, planner.UpgradeKraftVersion):
            try:
                quorum.upgrade_kraft_version(desired)
            except AdminError as e:
                on_failure(action, str(e))
                observed, observation, progress = look(progress)
                break
        elif isinstance(action, planner.ResignLeader):
            # remembered before it is sent: a leader that ignores it is rolled after a bound
            asked = (action.node_id, action.epoch, clock())
            progress = dataclasses.replace(progress, resign_asked=asked)
            try:
                quorum.resign(action, desired)
            except AdminError as e:
                on_failure(action, str(e))
        else:
            kube.execute(action, desired.names)
        on_action(action)
        if isinstance(action, planner.EndManualRoll):
            # desired.controls still shows the annotation: stop; the next run reads it afresh
            progress = dataclasses.replace(progress, manual_roll=frozenset())
            break
        if isinstance(action, planner.EndRecovery):
            break  # likewise: desired.controls still shows recover-from
        observed, observation, progress = look(progress)
    return Run(action, observed, observation, progress)


def progress_from_status(status: dict[str, Any]) -> Progress:
    """An operator restarted mid-change resumes its pending voter change, and a manual roll
    the pods it has still to restart, from the status."""
    uids = (status.get("manualRoll") or {}).get("podUids")
    roll = frozenset(str(u) for u in uids) if isinstance(uids, list) else None
    op = status.get("pendingOperation") or {}
    if op.get("kind") not in ("add", "remove") or "id" not in op:
        return Progress(manual_roll=roll)
    key = VoterKey(int(op["id"]), str(op.get("directoryId") or ""))
    kind: ChangeKind = "add" if op["kind"] == "add" else "remove"
    pending = PendingChange(kind, key, issued_ms=int(op.get("issuedAtMs") or 0))
    return Progress(pending=pending, manual_roll=roll)


def _post(body: kopf.Body, action: planner.Action) -> None:
    kopf.event(
        body, type="Normal", reason=events.event_reason(action), message=events.describe(action)
    )

"""kopf handlers: a level-triggered reconcile loop per MetadataQuorum.

Role: wire the pure planner to the cluster. One kopf timer per MetadataQuorum (every
RECONCILE_INTERVAL seconds, and at once when the object appears or the operator starts) runs
`reconcile`: describe the quorum (observe.py: DescribeQuorum through metaquorum.admin, in the
timer's worker thread, bounded by a few seconds), observe -> plan -> execute one action ->
observe again, up to MAX_STEPS actions, then write the status computed from the last
observation. With the real node (quorum mode "static") a cluster id is generated once and kept
in spec.clusterId before any pod formats its volume; a Refused plan posts one Warning Event when
the Ready condition turns to its reason. Every action the operator takes is posted
as a Kubernetes Event on the MetadataQuorum. Deletion is plain garbage collection through the
controller ownerReferences (PVCs too when spec.storage.deleteClaimsOnDelete); kopf's finalizer
only stops the timer first.

Run: `kopf run --standalone --all-namespaces -m metaquorum_operator.handlers` (the chart's
Deployment does this). Invariants: kopf's own bookkeeping goes to annotations, never status (the
CRD's status schema is closed); status is written only when it changes.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import os
from collections.abc import Callable
from typing import Any, Protocol

import kopf
from kubernetes import client, config

from metaquorum_operator import observe, planner
from metaquorum_operator.kube import Kube
from metaquorum_operator.model import (
    GROUP,
    PLURAL,
    VERSION,
    Names,
    OperatorConfig,
    Owner,
    QuorumSpec,
    new_cluster_id,
)
from metaquorum_operator.status import REFUSED_REASON, compute_status, differs

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
    _state["operator"] = OperatorConfig.from_env()
    _api()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    operator = (_state.get("operator") or OperatorConfig.from_env()).for_resource(
        dict(meta.get("annotations") or {})
    )
    quorum_spec = QuorumSpec.from_spec(dict(spec))
    if operator.static_quorum and not quorum_spec.cluster_id:
        # Generated once, before any pod formats its volume, and kept in the spec.
        cluster_id = new_cluster_id()
        kube.set_cluster_id(names, cluster_id)
        kopf.event(body, type="Normal", reason="ClusterId", message=f"cluster id {cluster_id}")
        quorum_spec = dataclasses.replace(quorum_spec, cluster_id=cluster_id)
    desired = planner.Desired(
        spec=quorum_spec,
        names=names,
        owner=Owner(name=names.name, uid=str(meta["uid"])),
        operator=operator,
    )
    observation = observe_quorum(kube, desired)
    quorum = observation.quorum

    def done(action: planner.Action) -> None:
        _post(body, action)
        logger.info("%s", _describe(action))

    try:
        action, observed = run_steps(kube, desired, quorum, done)
    except planner.NotOwned as e:
        kopf.warn(body, reason="NotOwned", message=str(e))
        raise kopf.TemporaryError(str(e), delay=30) from e
    generation = int(meta.get("generation") or 0)
    new = compute_status(
        desired.spec,
        names,
        generation=generation,
        observed=observed,
        quorum=quorum,
        action=action,
        now=_now(),
        previous=dict(status),
        quorum_error=observation.error or None,
        cluster_id=quorum_spec.cluster_id,
    )
    if isinstance(action, planner.Refused) and _ready_reason(status) != REFUSED_REASON:
        kopf.warn(body, reason=REFUSED_REASON, message=action.reason)
    if differs(new, dict(status)):
        kube.write_status(names, new)


def observe_quorum(kube: Cluster, desired: planner.Desired) -> observe.Observation:
    """DescribeQuorum through the admin client, in this worker thread, bounded by
    observe.DESCRIBE_TIMEOUT_S; nothing to describe before the StatefulSet has a member."""
    if not desired.operator.static_quorum:
        return observe.Observation(None)
    sts = kube.observe(desired.names).statefulset
    if sts is None or sts.replicas == 0:
        return observe.Observation(None)
    port = desired.spec.controller_port
    return observe.describe(observe.bootstrap_servers(desired.names, port, sts.replicas))


def _ready_reason(status: kopf.Status) -> str | None:
    for c in status.get("conditions") or []:
        if c.get("type") == "Ready":
            return str(c.get("reason"))
    return None


class Cluster(Protocol):
    """What the step loop needs from the cluster (kube.Kube; a model in the unit tests)."""

    def observe(self, names: Names) -> planner.Observed: ...

    def execute(self, action: planner.Action, names: Names) -> None: ...


def run_steps(
    kube: Cluster,
    desired: planner.Desired,
    quorum: planner.ObservedQuorum | None,
    on_action: Callable[[planner.Action], None],
) -> tuple[planner.Action, planner.Observed]:
    """Observe, plan, execute one action, observe again: until the planner waits or is
    converged, at most MAX_STEPS actions. Returns the last plan and the last observation."""
    observed = kube.observe(desired.names)
    action: planner.Action = planner.Converged()
    for _step in range(MAX_STEPS):
        action = planner.plan(desired, observed, quorum)
        if isinstance(action, (planner.Wait, planner.Refused, planner.Converged)):
            break
        kube.execute(action, desired.names)
        on_action(action)
        observed = kube.observe(desired.names)
    return action, observed


def _describe(action: planner.Action) -> str:
    if isinstance(action, planner.Apply):
        verb = "created" if action.create else "updated"
        m = action.manifest
        return f"{verb} {m['kind']} {m['metadata']['name']} ({action.reason})"
    if isinstance(action, planner.ScaleStatefulSet):
        return f"scaled StatefulSet to {action.replicas} replicas ({action.reason})"
    if isinstance(action, planner.DeletePod):
        return f"deleted pod {action.name} ({action.reason})"
    return action.reason


def _post(body: kopf.Body, action: planner.Action) -> None:
    reason = {
        planner.Apply: "Applied",
        planner.ScaleStatefulSet: "Scaled",
        planner.DeletePod: "RolledPod",
    }.get(type(action), "Reconciled")
    if isinstance(action, planner.Apply):
        reason = "Created" if action.create else "Updated"
    kopf.event(body, type="Normal", reason=reason, message=_describe(action))

"""The operator's Kubernetes IO: observe the owned objects, execute one planner action.

Role: the only module that calls the Kubernetes API for reconciles (handlers.py wires it to
kopf). `observe` reads the ConfigMap, both Services, the PDB, the StatefulSet, its pods and
their PVCs (whether a filesystem resize waits for the pod's restart) with uncached GETs, so
each decision is made on fresh state. `execute` performs a planner action:
create, or JSON-merge-patch an object to its desired manifest (lists replaced whole; the
StatefulSet by a JSON patch replacing its pod template whole, immutable fields and replicas
left alone); scale the StatefulSet; delete a pod;
remove the annotation metaquorum.dev/manual-roll from the MetadataQuorum once its roll is done.
`write_status` patches the status subresource. `claims`, `expandable` and `resize_claim` are
the IO of volume growth (volumes.py): read the quorum's PVCs and their StorageClass, raise a
PVC's request.

Invariants: never deletes anything but a pod the planner named (and that one annotation); all
writes are to objects named by `Names` in the owner's namespace; a 409 on create (object
appeared meanwhile) is not an error, the next observation sees it.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from metaquorum_operator import builders, placement, upgrades, volumes
from metaquorum_operator.actions import (
    Action,
    Apply,
    DeletePod,
    EndManualRoll,
    EndRecovery,
    Recover,
    ScaleStatefulSet,
)
from metaquorum_operator.model import (
    GROUP,
    MANUAL_ROLL_ANNOTATION,
    PLURAL,
    RECOVER_FROM_ANNOTATION,
    VERSION,
    Names,
    annotation_on,
)
from metaquorum_operator.observed import (
    Observed,
    ObservedObject,
    ObservedPod,
    ObservedStatefulSet,
)
from metaquorum_operator.recovery import RECOVER_KEY

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def _obj(meta: Any) -> ObservedObject:
    ann = meta.annotations or {}
    return ObservedObject(
        spec_hash=ann.get(builders.SPEC_HASH),
        owner_uids=tuple(r.uid for r in meta.owner_references or []),
    )


def _get(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _refusal(status: Any) -> str | None:
    """The format init container's refusal (exit builders.REFUSED_EXIT), current or last."""
    for cs in (status.init_container_statuses or []) if status else []:
        for state in (cs.state, cs.last_state):
            t = state.terminated if state else None
            if t is not None and t.exit_code == builders.REFUSED_EXIT:
                message = (t.message or "").strip().splitlines() or ["the volume was refused"]
                return message[-1].removeprefix(builders.REFUSED_PREFIX)
    return None


def _failing(status: Any) -> str | None:
    """A container of the pod that will not start by itself, as "<container> <reason>": waiting
    for a reason in upgrades.STALL_REASONS, or, between two of its CrashLoopBackOff waits, just
    exited with an error or running again, not ready, after an error exit. Without the last two
    a crash-looping pod read as starting about one reconcile in three, and the Upgrading and
    Degraded conditions flapped between UpgradeStalled and RollingImage (a clean-clone e2e run)."""
    for cs in (
        [*(status.init_container_statuses or []), *(status.container_statuses or [])]
        if status
        else []
    ):
        state, last = cs.state, cs.last_state
        waiting = state.waiting if state else None
        if waiting is not None and waiting.reason in upgrades.STALL_REASONS:
            return f"{cs.name} {waiting.reason}"
        crashed = last.terminated if last else None
        after_error = (
            not cs.ready and (cs.restart_count or 0) >= 1 and crashed and crashed.exit_code
        )
        now_up_or_down = state and (
            state.running or (state.terminated and state.terminated.exit_code)
        )
        if after_error and now_up_or_down:
            return f"{cs.name} CrashLoopBackOff"
    return None


def _fs_resize_pending_ms(pvc: Any, pod_created: Any) -> int | None:
    """When the PVC's FileSystemResizePending condition turned True (ms), if the pod was
    created no later (it mounted the volume before the driver grew it); else None."""
    conds = (pvc.status.conditions or []) if pvc is not None and pvc.status else []
    for c in conds:
        if c.type != "FileSystemResizePending" or c.status != "True":
            continue
        since = int(c.last_transition_time.timestamp() * 1000) if c.last_transition_time else 0
        if pod_created is None or int(pod_created.timestamp() * 1000) <= since:
            return since
    return None


def _node_image(spec: Any) -> str | None:
    for c in (spec.containers or []) if spec else []:
        if c.name == "node":
            return str(c.image)
    return None


class Kube:
    def __init__(self, api: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.policy = client.PolicyV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.storage = client.StorageV1Api(api)

    def observe(self, names: Names) -> Observed:
        ns = names.namespace
        objects: dict[str, ObservedObject | None] = {}
        formed, tombstones, recovery = False, frozenset[str](), ""
        for key, fn, name in (
            ("ConfigMap", self.core.read_namespaced_config_map, names.configmap),
            ("HeadlessService", self.core.read_namespaced_service, names.headless_service),
            ("ClientService", self.core.read_namespaced_service, names.client_service),
            ("PodDisruptionBudget", self.policy.read_namespaced_pod_disruption_budget, names.pdb),
        ):
            found = _get(fn, name, ns)
            objects[key] = None if found is None else _obj(found.metadata)
            if key == "ConfigMap" and found is not None:
                data = found.data or {}
                formed = data.get(builders.BOOTSTRAP_KEY) == "join"
                tombstones = frozenset(data.get(builders.TOMBSTONES_KEY, "").split())
                recovery = data.get(RECOVER_KEY, "")
        sts = _get(self.apps.read_namespaced_stateful_set, names.statefulset, ns)
        observed_sts = None
        if sts is not None:
            st = sts.status
            observed_sts = ObservedStatefulSet(
                obj=_obj(sts.metadata),
                replicas=int(sts.spec.replicas or 0),
                ready_replicas=int(st.ready_replicas or 0) if st else 0,
                current_replicas=int(st.current_replicas or 0) if st else 0,
                observed_generation=int(st.observed_generation or 0) if st else 0,
                generation=int(sts.metadata.generation or 0),
                update_revision=st.update_revision if st else None,
            )
        pods = []
        for p in self.core.list_namespaced_pod(ns, label_selector=names.label_selector()).items:
            pm = p.metadata
            assert pm is not None and pm.name is not None
            name = pm.name
            suffix = name.rsplit("-", 1)[-1]
            if not name.startswith(names.statefulset + "-") or not suffix.isdigit():
                continue
            conds = (p.status.conditions or []) if p.status else []
            ready = any(c.type == "Ready" and c.status == "True" for c in conds)
            pods.append(
                ObservedPod(
                    name=name,
                    ordinal=int(suffix),
                    ready=ready,
                    revision=(pm.labels or {}).get("controller-revision-hash"),
                    terminating=pm.deletion_timestamp is not None,
                    volume_refused=_refusal(p.status),
                    uid=str(pm.uid or ""),
                    image=_node_image(p.spec),
                    manual_roll=annotation_on(pm.annotations, MANUAL_ROLL_ANNOTATION),
                    failing=_failing(p.status),
                    unschedulable=placement.unschedulable(conds),
                    fs_resize_pending_ms=_fs_resize_pending_ms(
                        _get(
                            self.core.read_namespaced_persistent_volume_claim,
                            f"data-{name}",
                            ns,
                        ),
                        pm.creation_timestamp,
                    ),
                )
            )
        return Observed(
            objects=objects,
            statefulset=observed_sts,
            pods=sorted(pods, key=lambda p: p.ordinal),
            formed=formed,
            tombstones=tombstones,
            recovery=recovery,
        )

    def execute(self, action: Action, names: Names) -> None:
        ns = names.namespace
        if isinstance(action, Apply):
            m = action.manifest
            name = m["metadata"]["name"]
            kind = m["kind"]
            creators: dict[str, Any] = {
                "ConfigMap": self.core.create_namespaced_config_map,
                "Service": self.core.create_namespaced_service,
                "PodDisruptionBudget": self.policy.create_namespaced_pod_disruption_budget,
                "StatefulSet": self.apps.create_namespaced_stateful_set,
            }
            patchers: dict[str, Any] = {
                "ConfigMap": self.core.patch_namespaced_config_map,
                "Service": self.core.patch_namespaced_service,
                "PodDisruptionBudget": self.policy.patch_namespaced_pod_disruption_budget,
                "StatefulSet": self.apps.patch_namespaced_stateful_set,
            }
            if action.create:
                try:
                    creators[kind](ns, m)
                except ApiException as e:
                    if e.status != 409:
                        raise
                return
            if kind == "StatefulSet":  # the template replaced whole (statefulset_json_patch)
                ops = builders.statefulset_json_patch(m)
                patchers[kind](name, ns, ops, _content_type=JSON_PATCH)
                return
            body = {k: v for k, v in m.items() if k not in ("apiVersion", "kind")}
            if kind == "ConfigMap":  # a merge patch removes a key only when it says null
                body["data"] = {RECOVER_KEY: None, **body["data"]}
            patchers[kind](name, ns, body, _content_type=MERGE)
        elif isinstance(action, ScaleStatefulSet):
            self.apps.patch_namespaced_stateful_set(
                names.statefulset, ns, {"spec": {"replicas": action.replicas}}, _content_type=MERGE
            )
        elif isinstance(action, Recover):
            m = action.configmap
            body = {k: v for k, v in m.items() if k not in ("apiVersion", "kind")}
            self.core.patch_namespaced_config_map(
                m["metadata"]["name"], ns, body, _content_type=MERGE
            )
            # only the incarnation named by the token: a newer pod is left alone
            try:
                self.core.delete_namespaced_pod(
                    action.pod,
                    ns,
                    body=client.V1DeleteOptions(
                        preconditions=client.V1Preconditions(uid=action.token)
                    ),
                )
            except ApiException as e:
                if e.status not in (404, 409):
                    raise
        elif isinstance(action, DeletePod):
            try:
                self.core.delete_namespaced_pod(action.name, ns)
            except ApiException as e:
                if e.status != 404:
                    raise
        elif isinstance(action, EndManualRoll | EndRecovery):
            roll = isinstance(action, EndManualRoll)
            key = MANUAL_ROLL_ANNOTATION if roll else RECOVER_FROM_ANNOTATION
            self.custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                ns,
                PLURAL,
                names.name,
                {"metadata": {"annotations": {key: None}}},
                _content_type=MERGE,
            )

    def set_cluster_id(self, names: Names, cluster_id: str) -> None:
        """Record the cluster id once, in spec.clusterId (the CRD makes it immutable)."""
        self.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            names.namespace,
            PLURAL,
            names.name,
            {"spec": {"clusterId": cluster_id}},
            _content_type=MERGE,
        )

    def write_status(self, names: Names, status: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, names.namespace, PLURAL, names.name, {"status": status}
        )

    def claims(self, names: Names, replicas: int) -> list[volumes.Claim]:
        """The PVCs of pods 0..replicas-1 that exist (`data-<statefulset>-<i>`)."""
        found = []
        for i in range(replicas):
            pvc = _get(
                self.core.read_namespaced_persistent_volume_claim,
                f"data-{names.statefulset}-{i}",
                names.namespace,
            )
            if pvc is None:
                continue
            st = pvc.status
            conds = (st.conditions or []) if st else []
            found.append(
                volumes.Claim(
                    name=pvc.metadata.name,
                    requested=str((pvc.spec.resources.requests or {}).get("storage") or "0"),
                    capacity=(st.capacity or {}).get("storage") if st and st.capacity else None,
                    storage_class=pvc.spec.storage_class_name,
                    fs_resize_pending=any(
                        c.type == "FileSystemResizePending" and c.status == "True" for c in conds
                    ),
                )
            )
        return found

    def expandable(self, storage_class: str | None) -> bool:
        """Whether the StorageClass allows volume expansion (a missing class does not)."""
        if not storage_class:
            return False
        sc = _get(self.storage.read_storage_class, storage_class)
        return bool(sc is not None and sc.allow_volume_expansion)

    def resize_claim(self, names: Names, claim: str, size: str) -> None:
        self.core.patch_namespaced_persistent_volume_claim(
            claim,
            names.namespace,
            {"spec": {"resources": {"requests": {"storage": size}}}},
            _content_type=MERGE,
        )

"""Resource builders: the Kubernetes objects one MetadataQuorum needs, as plain dicts.

Role: from a `QuorumSpec` build the node ConfigMap (server.properties and the format script's
keys: node_config.py renders them), the headless Service (stable pod DNS names, published
before pods are ready so peers can find each other), the client Service, the
PodDisruptionBudget (policy/v1, at most one voter down) and the StatefulSet (podManagementPolicy
Parallel, updateStrategy OnDelete, one PVC template, the format init container running
node_config.FORMAT_SCRIPT).

Invariants: pure and deterministic (same spec -> same dicts); every object carries the owner's
controller ownerReference and the `metaquorum.dev/spec-hash` annotation, a hash of everything the
operator owns in it, which the planner compares to decide whether an object is stale. The
StatefulSet's `replicas` is not part of its hash: the planner moves it (up to spec.replicas at
once, the new pods joining as observers; down one pod at a time, as KIP-853 changes one voter at
a time). A config change changes the pod template (its hash is a
template annotation), so pods pick it up when the OnDelete roller replaces them.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from metaquorum_operator import placement
from metaquorum_operator.model import (
    CLUSTER_DOMAIN,
    CONFIG_DIR,
    CONFIG_FILE,
    DATA_DIR,
    TLS_DIR,
    Names,
    Owner,
    QuorumSpec,
)
from metaquorum_operator.node_config import (
    AUTO_JOIN,
    BOOTSTRAP_KEY,
    BOOTSTRAP_SERVERS,
    FORMAT_SCRIPT,
    REFUSED_EXIT,
    REFUSED_PREFIX,
    RESIGN_ENABLE,
    STATIC_VOTERS,
    TOMBSTONES_KEY,
    bootstrap_servers,
    node_properties,
    restart_relevant_config,
    server_properties,
    tls_env,
)
from metaquorum_operator.recovery import RECOVER_KEY

# node_config's names are re-exported: builders is where callers find what a manifest is made of
__all__ = [
    "AUTO_JOIN",
    "BOOTSTRAP_KEY",
    "BOOTSTRAP_SERVERS",
    "CONFIG_HASH",
    "FORMAT_SCRIPT",
    "METADATA_LOG_DIR",
    "METRICS_LABEL",
    "POD_INDEX_LABEL",
    "REFUSED_EXIT",
    "REFUSED_PREFIX",
    "RESIGN_ENABLE",
    "SPEC_HASH",
    "STATEFULSET_IMMUTABLE",
    "STATIC_VOTERS",
    "TOMBSTONES_KEY",
    "bootstrap_servers",
    "client_service",
    "configmap",
    "digest",
    "format_container",
    "headless_service",
    "node_container",
    "node_properties",
    "pod_disruption_budget",
    "restart_relevant_config",
    "server_properties",
    "statefulset",
    "statefulset_json_patch",
    "statefulset_update_patch",
    "tls_env",
]

SPEC_HASH = "metaquorum.dev/spec-hash"
CONFIG_HASH = "metaquorum.dev/config-hash"
# Set by the StatefulSet controller on each pod (GA in Kubernetes 1.32): the pod's ordinal.
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
METADATA_LOG_DIR = f"{DATA_DIR}/data"


def digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _meta(name: str, names: Names, owner: Owner) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": names.namespace,
        "labels": names.labels(),
        "ownerReferences": [owner.reference()],
    }


def _stamp(obj: dict[str, Any], hashed: Any) -> dict[str, Any]:
    obj["metadata"].setdefault("annotations", {})[SPEC_HASH] = digest(hashed)
    return obj


def configmap(
    spec: QuorumSpec,
    names: Names,
    owner: Owner,
    *,
    formed: bool = False,
    tombstones: frozenset[str] = frozenset(),
    recovery: str = "",
) -> dict[str, Any]:
    data = {
        CONFIG_FILE: server_properties(spec, names),
        BOOTSTRAP_KEY: "join" if formed else "standalone",
        TOMBSTONES_KEY: "".join(f"{d}\n" for d in sorted(tombstones)),
    }
    if recovery:  # a lost quorum's recovery asked of one pod (recovery.py)
        data[RECOVER_KEY] = recovery
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(names.configmap, names, owner),
        "data": data,
    }
    return _stamp(obj, data)


def _ports(spec: QuorumSpec) -> list[dict[str, Any]]:
    return [
        {
            "name": "controller",
            "port": spec.controller_port,
            "targetPort": "controller",
            "protocol": "TCP",
        },
        {"name": "http", "port": spec.http_port, "targetPort": "http", "protocol": "TCP"},
    ]


def headless_service(spec: QuorumSpec, names: Names, owner: Owner) -> dict[str, Any]:
    svc_spec = {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": names.selector_labels(),
        "ports": _ports(spec),
    }
    obj = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.headless_service, names, owner),
        "spec": svc_spec,
    }
    return _stamp(obj, svc_spec)


METRICS_LABEL = "metaquorum.dev/metrics"  # on the client Service: the chart's node ServiceMonitor


def client_service(spec: QuorumSpec, names: Names, owner: Owner) -> dict[str, Any]:
    svc_spec = {"type": "ClusterIP", "selector": names.selector_labels(), "ports": _ports(spec)}
    meta = _meta(names.client_service, names, owner)
    meta["labels"] = {**meta["labels"], METRICS_LABEL: "true"}
    obj = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": svc_spec,
    }
    return _stamp(obj, svc_spec)


def pod_disruption_budget(spec: QuorumSpec, names: Names, owner: Owner) -> dict[str, Any]:
    pdb_spec = {"maxUnavailable": 1, "selector": {"matchLabels": names.selector_labels()}}
    obj = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(names.pdb, names, owner),
        "spec": pdb_spec,
    }
    return _stamp(obj, pdb_spec)


def _env(spec: QuorumSpec, names: Names) -> list[dict[str, Any]]:
    """Env of both containers: the pod's identity and the per-pod node properties, as the
    node's METAQUORUM_<KEY> overrides."""

    def field_env(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    stable = f"$(POD_NAME).{names.headless_service}.{names.namespace}.svc.{CLUSTER_DOMAIN}"
    env: list[dict[str, Any]] = [
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        field_env("POD_IP", "status.podIP"),
        # node.id is the StatefulSet ordinal; listeners bind to the pod IP; the advertised
        # listener (the voter endpoint --standalone writes) is the pod's stable name.
        field_env("METAQUORUM_NODE_ID", f"metadata.labels['{POD_INDEX_LABEL}']"),
        {"name": "METAQUORUM_LISTENERS", "value": f"CONTROLLER://$(POD_IP):{spec.controller_port}"},
        {
            "name": "METAQUORUM_ADVERTISED_LISTENERS",
            "value": f"CONTROLLER://{stable}:{spec.controller_port}",
        },
        {"name": "METAQUORUM_METAQUORUM_HTTP_LISTENER", "value": f"$(POD_IP):{spec.http_port}"},
        # A path as env, not in the file: paths are not rewritten inside files where no
        # mount namespace exists (the e2e stand-in), and env overrides the file anyway.
        {"name": "METAQUORUM_METADATA_LOG_DIR", "value": METADATA_LOG_DIR},
        # Not a METAQUORUM_<KEY> override: only `storage format --cluster-id` reads it.
        {"name": "CLUSTER_ID", "value": spec.cluster_id or ""},
        *tls_env(spec),
    ]
    return env


def _mounts(spec: QuorumSpec) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"name": "data", "mountPath": DATA_DIR},
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
    ]
    if spec.tls_enabled:
        mounts.append({"name": "tls", "mountPath": TLS_DIR, "readOnly": True})
    return mounts


def format_container(spec: QuorumSpec, names: Names) -> dict[str, Any]:
    """The init container that formats an empty volume (FORMAT_SCRIPT)."""
    restore = spec.restore_from
    c: dict[str, Any] = {
        "name": "format",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["sh", "-c", FORMAT_SCRIPT, "metaquorum-format"],
        "args": ["--config", f"{CONFIG_DIR}/{CONFIG_FILE}"],
        "env": _env(spec, names) + (restore.env() if restore else []),
        "volumeMounts": _mounts(spec) + (restore.mounts() if restore else []),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if spec.resources:
        c["resources"] = {k: dict(v) for k, v in spec.resources.items()}
    return c


# The node container's probe timings unless spec.readinessProbe / spec.livenessProbe set them:
# /readyz (a leader known, caught up to its HW) gates every membership step and roll, so its
# period bounds how soon the operator sees a pod ready; /healthz restarts a hung node.
PROBE_DEFAULTS: dict[str, dict[str, int]] = {
    "readiness": {"periodSeconds": 5, "failureThreshold": 3},
    "liveness": {"periodSeconds": 10, "failureThreshold": 6, "initialDelaySeconds": 10},
}


def node_container(spec: QuorumSpec, names: Names) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": "node",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["metaquorum", "server", "start"],
        "args": ["--config", f"{CONFIG_DIR}/{CONFIG_FILE}"],
        "env": _env(spec, names),
        "ports": [
            {"name": "controller", "containerPort": spec.controller_port},
            {"name": "http", "containerPort": spec.http_port},
        ],
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "http"},
            **PROBE_DEFAULTS["readiness"],
            **spec.readiness_probe,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "http"},
            **PROBE_DEFAULTS["liveness"],
            **spec.liveness_probe,
        },
        "volumeMounts": _mounts(spec),
    }
    if spec.resources:
        c["resources"] = {k: dict(v) for k, v in spec.resources.items()}
    return c


def statefulset(spec: QuorumSpec, names: Names, owner: Owner, replicas: int) -> dict[str, Any]:
    volumes: list[dict[str, Any]] = [{"name": "config", "configMap": {"name": names.configmap}}]
    if spec.tls_enabled:
        volumes.append({"name": "tls", "secret": {"secretName": spec.tls_secret_name}})
    if spec.restore_from is not None:
        volumes += spec.restore_from.volumes()
    claim_spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": spec.storage_size}},
    }
    if spec.storage_class_name:
        claim_spec["storageClassName"] = spec.storage_class_name
    template = {
        "metadata": {
            "labels": names.labels(),
            "annotations": {CONFIG_HASH: digest(restart_relevant_config(spec, names))},
        },
        "spec": {
            "initContainers": [format_container(spec, names)],
            "containers": [node_container(spec, names)],
            "volumes": volumes,
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": 30,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000},
        },
    }
    sts_spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": names.headless_service,
        "podManagementPolicy": "Parallel",
        "updateStrategy": {"type": "OnDelete"},
        "selector": {"matchLabels": names.selector_labels()},
        "persistentVolumeClaimRetentionPolicy": {
            "whenDeleted": "Delete" if spec.delete_claims_on_delete else "Retain",
            "whenScaled": "Delete" if spec.delete_claims_on_scale_down else "Retain",
        },
        # spec.podTemplate and the default spread of the voters (placement.py)
        "template": placement.render(template, spec.pod_template, names),
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim_spec}],
    }
    obj = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(names.statefulset, names, owner),
        "spec": sts_spec,
    }
    hashed = copy.deepcopy(sts_spec)
    del hashed["replicas"]
    return _stamp(obj, hashed)


# Fields of a StatefulSet the apiserver refuses to change after creation.
STATEFULSET_IMMUTABLE = ("serviceName", "podManagementPolicy", "selector", "volumeClaimTemplates")


def statefulset_update_patch(desired: dict[str, Any]) -> dict[str, Any]:
    """A merge patch bringing an existing StatefulSet to `desired` (replicas untouched)."""
    spec = {
        k: v
        for k, v in desired["spec"].items()
        if k not in STATEFULSET_IMMUTABLE and k != "replicas"
    }
    return {
        "metadata": {
            "labels": desired["metadata"]["labels"],
            "annotations": desired["metadata"]["annotations"],
        },
        "spec": spec,
    }


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def statefulset_json_patch(desired: dict[str, Any]) -> list[dict[str, Any]]:
    """The update of statefulset_update_patch as a JSON patch (RFC 6902): each mutable spec
    field replaced whole (`add` replaces a present member), so a key removed from a map in the
    pod template (a nodeSelector or podTemplate label dropped) goes too, which a merge patch
    would keep; labels and annotations set key by key (others' keys stay)."""
    merge = statefulset_update_patch(desired)
    ops = [{"op": "add", "path": f"/spec/{k}", "value": v} for k, v in merge["spec"].items()]
    for part in ("labels", "annotations"):
        for k, v in merge["metadata"][part].items():
            ops.append({"op": "add", "path": f"/metadata/{part}/{_pointer(k)}", "value": v})
    return ops

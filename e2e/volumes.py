"""Volumes for the kubelet stand-in: a local-directory provisioner and per-pod volume setup.

Role: stands in for a CSI driver and the kubelet's volume manager. `provision` creates one PV
(hostPath under STATE/pv/) pre-bound to each pending PVC of the stand-in's StorageClass, so the
controller-manager's PV binder binds them; it deletes Released PVs it provisioned together with
their directories (reclaimPolicy Delete). `prepare` materialises a pod's volumes as local
directories: PVC (the PV's directory), configMap, secret, emptyDir, downwardAPI, hostPath and
projected (including the service-account token, which it also writes as a kubeconfig for the
process, since in-cluster config cannot be reached here).

Invariants: a pod starts only when every volume it names is ready (`prepare` returns None until
then); a PV's directory exists exactly as long as the PV object does.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
PROVISIONER = "e2e.metaquorum.dev/standin"


def provision(
    core: client.CoreV1Api,
    state: Path,
    storage_class: str,
    local_node: str | None = None,
    provisioner: str = PROVISIONER,
) -> None:
    """With local_node (the real kubelet), PVs are `local` volumes pinned to that node, which
    the kubelet mounts and chowns to the pod's fsGroup; else hostPath (the stand-in)."""
    for pvc in core.list_persistent_volume_claim_for_all_namespaces().items:
        if pvc.status.phase != "Pending" or pvc.spec.volume_name:
            continue
        if pvc.spec.storage_class_name != storage_class:
            continue
        name = f"pvc-{pvc.metadata.uid}"
        path = state / "pv" / name
        path.mkdir(parents=True, exist_ok=True)
        source: dict[str, Any] = {"hostPath": {"path": str(path), "type": "DirectoryOrCreate"}}
        if local_node is not None:
            source = local_source(path, local_node)
        capacity = pvc.spec.resources.requests["storage"]
        create_bound_pv(
            core, pvc, name=name, capacity=capacity, source=source, provisioner=provisioner
        )
    for pv in core.list_persistent_volume().items:
        ann = pv.metadata.annotations or {}
        if pv.status.phase == "Released" and ann.get(PROVISIONED_BY) == provisioner:
            if pv.spec.host_path is not None:
                shutil.rmtree(pv.spec.host_path.path, ignore_errors=True)
            if pv.spec.local is not None:
                shutil.rmtree(pv.spec.local.path, ignore_errors=True)
            try:
                core.delete_persistent_volume(pv.metadata.name)
            except ApiException as e:
                if e.status != 404:
                    raise


def local_source(path: Path, node: str) -> dict[str, Any]:
    """A PV's `local` source at `path`, pinned to `node` (the kubelet mounts it there only)."""
    term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    return {
        "local": {"path": str(path)},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}},
    }


def create_bound_pv(
    core: client.CoreV1Api,
    pvc: Any,
    *,
    name: str,
    capacity: str,
    source: dict[str, Any],
    provisioner: str,
) -> None:
    """Create PV `name` of `pvc`'s class and access modes, pre-bound to it (claimRef with its
    uid, so the PV binder binds exactly that claim), reclaimPolicy Delete, annotated as
    provisioned by `provisioner`; `source` is its volume source (hostPath, or `local_source`).
    A PV already there (409: created on an earlier pass) is left as it is."""
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY: provisioner}},
        "spec": {
            "capacity": {"storage": capacity},
            "accessModes": pvc.spec.access_modes,
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": pvc.spec.storage_class_name,
            **source,
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": pvc.metadata.namespace,
                "name": pvc.metadata.name,
                "uid": pvc.metadata.uid,
            },
        },
    }
    try:
        core.create_persistent_volume(pv)
    except ApiException as e:
        if e.status != 409:
            raise


def pv_dir_of_claim(core: client.CoreV1Api, state: Path, namespace: str, claim: str) -> Path | None:
    try:
        pvc = core.read_namespaced_persistent_volume_claim(claim, namespace)
        if not pvc.spec.volume_name:
            return None
        pv = core.read_persistent_volume(pvc.spec.volume_name)
    except ApiException:
        return None
    if pv.spec.host_path is None:
        return None
    return Path(pv.spec.host_path.path)


def _read(core: client.CoreV1Api, kind: str, name: str, ns: str) -> dict[str, str] | None:
    try:
        if kind == "configMap":
            return dict(core.read_namespaced_config_map(name, ns).data or {})
        data = core.read_namespaced_secret(name, ns).data or {}
        return {k: base64.b64decode(v).decode() for k, v in data.items()}
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _write_items(d: Path, data: dict[str, str], items: list[dict[str, Any]] | None) -> None:
    d.mkdir(parents=True, exist_ok=True)
    pairs = [(i["key"], i["path"]) for i in items] if items else [(k, k) for k in data]
    for key, rel in pairs:
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(data.get(key, ""))


def _token(core: client.CoreV1Api, pod: dict[str, Any], expiry: int) -> str:
    meta = pod["metadata"]
    sa = pod["spec"].get("serviceAccountName") or "default"
    req = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "audiences": [],
            "expirationSeconds": max(expiry, 3600),
            "boundObjectRef": {
                "kind": "Pod",
                "apiVersion": "v1",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        },
    }
    resp = core.create_namespaced_service_account_token(sa, meta["namespace"], req)
    return str(resp.status.token)


def _kubeconfig(path: Path, server: str, ca_file: str, token: str) -> None:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: c\n  cluster:\n    server: {server}\n"
        f"    certificate-authority: {ca_file}\n"
        f"users:\n- name: u\n  user:\n    token: {token}\n"
        "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
        "current-context: c\n"
    )
    path.chmod(0o600)


def _refs(container: dict[str, Any], kind: str) -> set[str]:
    key, src = (
        ("configMapKeyRef", "configMapRef")
        if kind == "configMap"
        else ("secretKeyRef", "secretRef")
    )
    names = {
        e["valueFrom"][key]["name"]
        for e in container.get("env") or []
        if key in (e.get("valueFrom") or {})
    }
    names |= {s[src]["name"] for s in container.get("envFrom") or [] if src in s}
    return names


def prepare(
    core: client.CoreV1Api, pod: dict[str, Any], pod_dir: Path, server: str, ca_file: str
) -> (
    tuple[dict[str, str], dict[str, dict[str, str]], dict[str, dict[str, str]], dict[str, str]]
    | None
):
    """(volume dirs, configmaps for env, secrets for env, PVC-backed dirs) or None if a
    volume is not ready yet."""
    ns = pod["metadata"]["namespace"]
    vdirs: dict[str, str] = {}
    pv_dirs: dict[str, str] = {}
    token: str | None = None
    for vol in pod["spec"].get("volumes") or []:
        name = vol["name"]
        d = pod_dir / "volumes" / name
        if "persistentVolumeClaim" in vol:
            claim = vol["persistentVolumeClaim"]["claimName"]
            path = pv_dir_of_claim(core, pod_dir, ns, claim)
            if path is None:
                return None
            path.mkdir(parents=True, exist_ok=True)
            vdirs[name] = pv_dirs[claim] = str(path)
            continue
        if "hostPath" in vol:
            vdirs[name] = vol["hostPath"]["path"]
            continue
        if "emptyDir" in vol:
            d.mkdir(parents=True, exist_ok=True)
        for kind in ("configMap", "secret"):
            if kind in vol:
                ref = vol[kind].get("name") or vol[kind].get("secretName")
                data = _read(core, kind, ref, ns)
                if data is None and not vol[kind].get("optional"):
                    return None
                _write_items(d, data or {}, vol[kind].get("items"))
        for src in (vol.get("projected") or {}).get("sources") or []:
            if "serviceAccountToken" in src:
                sat = src["serviceAccountToken"]
                token = _token(core, pod, int(sat.get("expirationSeconds") or 3600))
                _write_items(d, {"t": token}, [{"key": "t", "path": sat["path"]}])
            for kind in ("configMap", "secret"):
                if kind in src:
                    data = _read(core, kind, src[kind]["name"], ns)
                    if data is None and not src[kind].get("optional"):
                        return None
                    _write_items(d, data or {}, src[kind].get("items"))
            if "downwardAPI" in src:
                _write_items(
                    d,
                    {"namespace": ns},
                    [
                        {"key": "namespace", "path": i["path"]}
                        for i in src["downwardAPI"]["items"]
                        if i.get("fieldRef", {}).get("fieldPath") == "metadata.namespace"
                    ],
                )
        d.mkdir(parents=True, exist_ok=True)
        vdirs[name] = str(d)
    pod_dir.mkdir(parents=True, exist_ok=True)
    if token is not None:
        _kubeconfig(pod_dir / "kubeconfig", server, ca_file, token)
    c = pod["spec"]["containers"][0]
    cms: dict[str, dict[str, str]] = {}
    secrets: dict[str, dict[str, str]] = {}
    for kind, out in (("configMap", cms), ("secret", secrets)):
        for ref in _refs(c, kind):
            data = _read(core, kind, ref, ns)
            if data is not None:
                out[ref] = data
    return vdirs, cms, secrets, pv_dirs

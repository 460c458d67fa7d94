"""Expandable volumes for the real-kubelet target's provisioner: XFS on a loopback file.

Role: what a CSI driver with online expansion does (controller + node side), for the e2e
StorageClass EXPANDABLE_CLASS (allowVolumeExpansion: true). `provision` gives each pending PVC
of that class a sparse file under STATE/pv/ formatted XFS and loop-mounted at the PV's
directory, and a `local` PV pinned to the node over that directory, pre-bound to the claim
(volumes.create_bound_pv; the kubelet bind-mounts it into the pod, so the pod sees a
filesystem of that size). `expand` is the resizer: for a bound PVC whose request exceeds its
capacity it grows the file, refreshes the loop device (`losetup -c`) and grows the mounted
filesystem online (`xfs_growfs`), then writes the new size to the PV's capacity and the PVC's
status.capacity, as the external-resizer and the kubelet do: the pod sees the larger
filesystem without a restart. `release` unmounts and deletes a Released PV's file.

Offline mode: the class OFFLINE_CLASS (parameter onlineExpansion: "false") is a driver that
cannot grow a mounted filesystem. Its resizer grows the file (the controller side) and sets the
PVC's condition FileSystemResizePending, with the kubelet's own message, recording on the PV
the pods that had the volume mounted then; the filesystem, the PV's capacity and the PVC's
status.capacity grow (and the condition goes) only once another pod mounts the volume (a
restart: the StatefulSet's new pod has a new uid), as a CSI node plugin without online
expansion does at NodeStage. The PV's capacity is raised with the node step, not before: the
kubelet compares a mounted volume's PV capacity with its PVC's status.capacity and would take
a larger PV as a resize of its own to finish on the `local` volume (which it cannot grow).

XFS, not ext4: growing a mounted ext4 needs CAP_SYS_RESOURCE, which a container runtime may
withhold (it does here); xfs_growfs needs CAP_SYS_ADMIN only. XFS needs 300 MiB at least: a
smaller request gets a 300 MiB file (the PV's capacity is the request).

Invariants: the loop devices are mounted with autoclear (`mount -o loop`), so unmounting (the
cluster's teardown: controlplane.stop_dir unmounts everything under its root) frees them; a
PV's directory is mounted exactly while its PV exists; needs root and xfsprogs
(e2e/tools/container-host.sh installs it).
"""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path
from typing import Any

import volumes
from kubernetes import client
from kubernetes.utils import parse_quantity

EXPANDABLE_CLASS = "e2e-expandable"
OFFLINE_CLASS = "e2e-expandable-offline"
CLASSES = (EXPANDABLE_CLASS, OFFLINE_CLASS)
MOUNTED_BY = "e2e.metaquorum.dev/mounted-by"  # on a PV: pod uids when the file grew
# the message the kubelet's volume manager sets with the condition
PENDING_MESSAGE = (
    "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
)
XFS_MIN_BYTES = 300 * 1024 * 1024
MERGE = "application/merge-patch+json"


def storage_classes(provisioner: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "parameters": {"onlineExpansion": "true" if name == EXPANDABLE_CLASS else "false"},
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": True,
        }
        for name in CLASSES
    ]


def _bytes(quantity: str) -> int:
    return int(parse_quantity(quantity))


def _run(*cmd: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.stdout.strip()}")


def _mounted(path: Path) -> bool:
    return os.path.ismount(path)


def provision(core: client.CoreV1Api, state: Path, node: str, provisioner: str) -> None:
    for pvc in core.list_persistent_volume_claim_for_all_namespaces().items:
        if pvc.status.phase != "Pending" or pvc.spec.volume_name:
            continue
        if pvc.spec.storage_class_name not in CLASSES:
            continue
        name = f"pvc-{pvc.metadata.uid}"
        path, image = state / "pv" / name, state / "pv" / f"{name}.img"
        size = pvc.spec.resources.requests["storage"]
        path.mkdir(parents=True, exist_ok=True)
        if not _mounted(path):
            if not image.exists():
                with image.open("wb") as f:
                    f.truncate(max(_bytes(size), XFS_MIN_BYTES))
                _run("mkfs.xfs", "-q", "-f", str(image))
            _run("mount", "-o", "loop", str(image), str(path))
        source = volumes.local_source(path, node)
        volumes.create_bound_pv(
            core, pvc, name=name, capacity=size, source=source, provisioner=provisioner
        )


def _grow_file(path: Path, want: str) -> None:
    image = path.parent / f"{path.name}.img"
    if image.stat().st_size < _bytes(want):
        with image.open("r+b") as f:
            f.truncate(_bytes(want))


def _grow_filesystem(path: Path) -> None:
    image = path.parent / f"{path.name}.img"
    found = subprocess.run(
        ["losetup", "-j", str(image)], capture_output=True, text=True, check=True
    ).stdout
    _run("losetup", "-c", found.split(":", 1)[0])
    _run("xfs_growfs", str(path))


def _mounting_pods(core: client.CoreV1Api, pvc: Any) -> set[str]:
    """The uids of the pods (not terminating) that mount the claim."""
    return {
        p.metadata.uid
        for p in core.list_namespaced_pod(pvc.metadata.namespace).items
        if p.metadata.deletion_timestamp is None
        and any(
            v.persistent_volume_claim and v.persistent_volume_claim.claim_name == pvc.metadata.name
            for v in p.spec.volumes or []
        )
    }


def _pending(pvc: Any) -> bool:
    return any(
        c.type == "FileSystemResizePending" and c.status == "True"
        for c in pvc.status.conditions or []
    )


def _done(core: client.CoreV1Api, pvc: Any, pv: Any, want: str) -> None:
    """The node side finished: the PVC's status, then the PV's capacity, say `want` (in that
    order, so the kubelet never sees a PV larger than its PVC's capacity)."""
    core.patch_namespaced_persistent_volume_claim_status(
        pvc.metadata.name,
        pvc.metadata.namespace,
        {"status": {"capacity": {"storage": want}, "conditions": None}},
        _content_type=MERGE,
    )
    core.patch_persistent_volume(
        pv.metadata.name,
        {"metadata": {"annotations": {MOUNTED_BY: None}}, "spec": {"capacity": {"storage": want}}},
        _content_type=MERGE,
    )


def expand(core: client.CoreV1Api) -> None:
    """Grow every bound PVC of the classes whose request exceeds its capacity: online for
    EXPANDABLE_CLASS; for OFFLINE_CLASS the file now, the filesystem at the next mount."""
    for pvc in core.list_persistent_volume_claim_for_all_namespaces().items:
        if pvc.spec.storage_class_name not in CLASSES or pvc.status.phase != "Bound":
            continue
        want = pvc.spec.resources.requests["storage"]
        have = (pvc.status.capacity or {}).get("storage")
        if have is not None and _bytes(have) >= _bytes(want):
            continue
        pv = core.read_persistent_volume(pvc.spec.volume_name)
        path = Path(pv.spec.local.path)
        if pvc.spec.storage_class_name == EXPANDABLE_CLASS:
            _grow_file(path, want)
            _grow_filesystem(path)
            _done(core, pvc, pv, want)
            continue
        mounted = _mounting_pods(core, pvc)
        if not _pending(pvc):  # the controller side: the file grows, the filesystem waits
            _grow_file(path, want)
            by = ",".join(sorted(mounted))
            core.patch_persistent_volume(
                pv.metadata.name,
                {"metadata": {"annotations": {MOUNTED_BY: by}}},
                _content_type=MERGE,
            )
            now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            condition = {
                "type": "FileSystemResizePending",
                "status": "True",
                "lastTransitionTime": now,
                "message": PENDING_MESSAGE,
            }
            core.patch_namespaced_persistent_volume_claim_status(
                pvc.metadata.name,
                pvc.metadata.namespace,
                {"status": {"conditions": [condition]}},
                _content_type=MERGE,
            )
            continue
        before = set(
            filter(None, ((pv.metadata.annotations or {}).get(MOUNTED_BY) or "").split(","))
        )
        if mounted - before:  # a new pod mounts the volume: the node side grows it
            _grow_file(path, want)
            _grow_filesystem(path)
            _done(core, pvc, pv, want)


def release(core: client.CoreV1Api) -> None:
    """Released PVs of the class: unmount the directory (freeing the loop) and delete the file;
    volumes.provision then deletes the directory and the PV."""
    for pv in core.list_persistent_volume().items:
        if pv.spec.storage_class_name not in CLASSES or pv.status.phase != "Released":
            continue
        path = Path(pv.spec.local.path)
        if _mounted(path):
            _run("umount", str(path))
        (path.parent / f"{path.name}.img").unlink(missing_ok=True)

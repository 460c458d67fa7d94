"""The kubelet stand-in's Node: registration, status heartbeats, Lease renewal, StorageClass.

Role: what a kubelet does so the control plane treats its node as healthy: create the Node
`standin`, patch its status (Ready, no pressure, capacity, addresses, nodeInfo) and renew its
Lease in kube-node-lease; the stand-in calls `heartbeat` every 10 s, well inside the
node-lifecycle controller's grace period, so the node is never tainted. Also creates the default
StorageClass `standin`, whose PVs volumes.py provisions.
Invariant: registration is idempotent (existing objects are kept).
"""

from __future__ import annotations

import contextlib
import datetime
import time
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

NODE = "standin"
STORAGE_CLASS = "standin"
PROVISIONER = "e2e.metaquorum.dev/standin"
LEASE_NS = "kube-node-lease"


def micro_now() -> datetime.datetime:
    """A MicroTime: the client serialises datetimes with isoformat, which drops a zero
    microsecond field that the apiserver requires."""
    t = datetime.datetime.now(datetime.UTC)
    return t.replace(microsecond=t.microsecond or 1)


def register(core: client.CoreV1Api, storage: client.StorageV1Api) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux"},
        },
    }
    with contextlib.suppress(ApiException):
        core.create_node(node)
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
    with contextlib.suppress(ApiException):
        storage.create_storage_class(sc)


def node_status() -> dict[str, Any]:
    t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conds = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet stand-in is posting ready status",
            "lastHeartbeatTime": t,
            "lastTransitionTime": t,
        }
    ]
    for ctype in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        conds.append(
            {
                "type": ctype,
                "status": "False",
                "reason": f"KubeletHasNo{ctype}",
                "lastHeartbeatTime": t,
                "lastTransitionTime": t,
            }
        )
    res = {"cpu": "2", "memory": "24Gi", "pods": "250", "ephemeral-storage": "100Gi"}
    info = dict.fromkeys(
        ("kernelVersion", "osImage", "kubeProxyVersion", "machineID", "systemUUID", "bootID"),
        "",
    )
    info.update(
        {
            "kubeletVersion": "v1.34.4-standin",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "containerRuntimeVersion": "standin://1",
        }
    )
    return {
        "conditions": conds,
        "capacity": res,
        "allocatable": res,
        "addresses": [
            {"type": "InternalIP", "address": "127.0.0.1"},
            {"type": "Hostname", "address": NODE},
        ],
        "nodeInfo": info,
    }


def heartbeat(core: client.CoreV1Api, coord: client.CoordinationV1Api) -> None:
    core.patch_node_status(NODE, {"status": node_status()})
    lease = {
        "metadata": {"name": NODE, "namespace": LEASE_NS},
        "spec": {"holderIdentity": NODE, "leaseDurationSeconds": 40, "renewTime": micro_now()},
    }
    try:
        coord.patch_namespaced_lease(NODE, LEASE_NS, lease)
    except ApiException as e:
        if e.status != 404:
            raise
        coord.create_namespaced_lease(LEASE_NS, lease)

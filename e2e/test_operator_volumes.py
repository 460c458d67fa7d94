"""Volume growth on the real kubelet target: raising spec.storage.size grows the PVC and the
filesystem the pod sees, without a restart, where the StorageClass allows expansion; says so,
with the fix, where it does not.

- Expandable: one voter on the provisioner's class e2e-expandable (XFS on a loopback file,
  e2e/expansion.py), 512Mi. The node's own /metrics (metaquorum_log_dir_size_bytes: statvfs of
  its metadata.log.dir, inside the pod) shows about 512 MiB. spec.storage.size 1Gi: the
  operator raises the PVC's request (Event VolumeResizing), the provisioner grows the file and
  the mounted filesystem; the PVC's status.capacity becomes 1Gi, the pod (same uid, no
  container restart) sees about 1 GiB, VolumesResized True/AsRequested.
- Expandable offline only: three voters on e2e-expandable-offline (the same provisioner as a
  driver without online expansion: it grows the file, then waits in FileSystemResizePending
  until a new pod mounts the volume), 512Mi -> 1Gi. The PVCs wait, the pods still see ~512 MiB;
  after the grace (the e2e operator's operator.fsResizeGraceMs, 15 s) the operator restarts
  each pod once, followers first and the leader last (Events FileSystemResize, one
  LeaderResigning); then every PVC's capacity is 1Gi, each pod sees ~1 GiB, the voters keep
  their directory ids (the data stayed) and the high watermark went on, VolumesResized True.
- Not expandable: the default class (no allowVolumeExpansion): spec.storage.size 2Gi leaves the
  PVC at 1Gi, VolumesResized False/ExpansionNotAllowed naming the class and the fix, and a
  Warning Event VolumeExpansionNotAllowed.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from harness import TIMINGS, Cluster, wait_for
from quorums import E2E_SPEC, GROUP, VERSION, cond, mq, settled, use_pod_names

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024


def apply(cluster: Cluster, ns: str, storage: dict[str, Any], replicas: int = 1) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MetadataQuorum",
        "metadata": {"name": "quorum", "namespace": ns},
        "spec": {
            "replicas": replicas,
            **E2E_SPEC,
            "storage": {"deleteClaimsOnDelete": True, **storage},
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


def resize(cluster: Cluster, ns: str, size: str) -> None:
    patch = json.dumps({"spec": {"storage": {"size": size}}})
    cluster.kubectl("patch", "metadataquorum", "quorum", "-n", ns, "--type=merge", "-p", patch)


def pod_fs_size(cluster: Cluster, ns: str, pod: str = "quorum-0") -> float:
    """The size of the filesystem holding the node's log, as the node in the pod sees it."""
    ip = cluster.core.read_namespaced_pod(pod, ns).status.pod_ip
    with urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=5) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith("metaquorum_log_dir_size_bytes "):
            return float(line.split()[1])
    raise AssertionError("metaquorum_log_dir_size_bytes missing from the node's /metrics")


def events(cluster: Cluster, ns: str, reason: str) -> list[Any]:
    selector = f"involvedObject.kind=MetadataQuorum,reason={reason}"
    return list(cluster.core.list_namespaced_event(ns, field_selector=selector).items)


def local_only(cluster: Cluster) -> None:
    if cluster.kind != "local":
        pytest.skip("the expandable StorageClass is the real-kubelet target's provisioner's")


def test_growing_on_an_expandable_class_grows_the_pvc_and_the_pods_filesystem_online(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    local_only(cluster)
    use_pod_names(cluster)
    ns = namespace
    apply(cluster, ns, {"size": "512Mi", "storageClassName": "e2e-expandable"})
    wait_for(lambda: settled(cluster, ns, [0]), 180, "1 voter Running")
    before = pod_fs_size(cluster, ns)
    assert 400 * MiB < before <= 512 * MiB, before
    pod = cluster.core.read_namespaced_pod("quorum-0", ns)
    uid, restarts = pod.metadata.uid, cluster.restarts(ns, "quorum-0", "node")

    resize(cluster, ns, "1Gi")

    def grown() -> Any:
        pvc = cluster.core.read_namespaced_persistent_volume_claim("data-quorum-0", ns)
        return (pvc.status.capacity or {}).get("storage") == "1Gi" and pvc

    pvc = wait_for(grown, 90, "the PVC's capacity 1Gi")
    assert pvc.spec.resources.requests["storage"] == "1Gi"
    after = wait_for(
        lambda: (s := pod_fs_size(cluster, ns)) > 900 * MiB and s, 30, "the pod sees ~1 GiB"
    )
    assert after <= 1024 * MiB
    c = wait_for(
        lambda: (c := cond(mq(cluster, ns), "VolumesResized")).get("status") == "True" and c,
        30,
        "VolumesResized True",
    )
    assert c["reason"] == "AsRequested"
    assert [e.message for e in events(cluster, ns, "VolumeResizing")] == [
        "data-quorum-0: request raised to 1Gi"
    ]
    assert cluster.core.read_namespaced_pod("quorum-0", ns).metadata.uid == uid
    assert cluster.restarts(ns, "quorum-0", "node") == restarts
    assert settled(cluster, ns, [0])


@pytest.mark.e2e_long  # make e2e-long
def test_growing_where_the_driver_cannot_grow_online_rolls_the_pods_leader_last(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    local_only(cluster)
    use_pod_names(cluster)
    ns, pods = namespace, [f"quorum-{i}" for i in range(3)]
    apply(cluster, ns, {"size": "512Mi", "storageClassName": "e2e-expandable-offline"}, 3)
    wait_for(lambda: settled(cluster, ns, [0, 1, 2]), 300, "3 voters Running")
    before = mq(cluster, ns)["status"]
    leader, hw = before["leader"], before["highWatermark"]
    dirs = {v["id"]: v["directoryId"] for v in before["voters"]}
    uids = cluster.pod_uids(ns, 3)
    t0 = time.monotonic()

    resize(cluster, ns, "1Gi")

    def claim(i: int) -> Any:
        return cluster.core.read_namespaced_persistent_volume_claim(f"data-quorum-{i}", ns)

    def pending(i: int) -> bool:
        return any(c.type == "FileSystemResizePending" for c in claim(i).status.conditions or [])

    wait_for(lambda: all(pending(i) for i in range(3)), 60, "3 PVCs FileSystemResizePending")
    assert all(claim(i).status.capacity["storage"] == "512Mi" for i in range(3))
    assert cluster.pod_uids(ns, 3) == uids  # nothing restarted within the grace
    assert all(pod_fs_size(cluster, ns, p) <= 512 * MiB for p in pods)
    wait_for(
        lambda: "filesystem resize pending" in cond(mq(cluster, ns), "VolumesResized")["message"],
        10,
        "VolumesResized naming the pending filesystem resize",
    )

    def grown() -> bool:
        return all((claim(i).status.capacity or {}).get("storage") == "1Gi" for i in range(3))

    wait_for(lambda: grown() and settled(cluster, ns, [0, 1, 2]), 300, "3 PVCs 1Gi, 3 voters")
    TIMINGS["offline volume growth, 3 pods rolled (s)"] = time.monotonic() - t0
    now = cluster.pod_uids(ns, 3)
    assert all(now[i] != uids[i] for i in range(3)), "every pod restarted"
    created = {p: cluster.core.read_namespaced_pod(p, ns).metadata.creation_timestamp for p in pods}
    order = sorted(pods, key=lambda p: created[p])
    assert order[-1] == f"quorum-{leader}", f"the leader was not restarted last: {order}"
    rolled = [e.message.split()[2] for e in events(cluster, ns, "FileSystemResize")]
    assert sorted(rolled) == pods, rolled  # each once
    # the leader was asked to resign before its pod was deleted; asked again only if it won the
    # next election too (it did once, under load: 2 Events, both for the leader)
    resigning = [e.message for e in events(cluster, ns, "LeaderResigning")]
    assert resigning and all(f"leader {leader} " in m for m in resigning), resigning
    sizes = [pod_fs_size(cluster, ns, p) for p in pods]
    assert all(900 * MiB < s <= 1024 * MiB for s in sizes), sizes
    after = mq(cluster, ns)["status"]
    assert {v["id"]: v["directoryId"] for v in after["voters"]} == dirs  # the data stayed
    assert after["highWatermark"] > hw  # a new leader appended since
    c = wait_for(
        lambda: (c := cond(mq(cluster, ns), "VolumesResized")).get("status") == "True" and c,
        30,
        "VolumesResized True",
    )
    assert c["reason"] == "AsRequested"
    time.sleep(5)  # a few reconciles more: no second roll
    assert cluster.pod_uids(ns, 3) == now


def test_growing_on_a_class_without_expansion_is_named_with_the_fix(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    local_only(cluster)
    use_pod_names(cluster)
    ns = namespace
    apply(cluster, ns, {"size": "1Gi"})
    wait_for(lambda: settled(cluster, ns, [0]), 180, "1 voter Running")
    resize(cluster, ns, "2Gi")

    def refused() -> Any:
        c = cond(mq(cluster, ns), "VolumesResized")
        return c.get("reason") == "ExpansionNotAllowed" and c

    c = wait_for(refused, 60, "VolumesResized ExpansionNotAllowed")
    assert c["status"] == "False"
    assert "StorageClass local-dirs does not allow volume expansion" in c["message"], c
    assert "allowVolumeExpansion: true" in c["message"]
    warned = wait_for(lambda: events(cluster, ns, "VolumeExpansionNotAllowed"), 30, "a Warning")
    assert warned[0].type == "Warning"
    pvc = cluster.core.read_namespaced_persistent_volume_claim("data-quorum-0", ns)
    assert pvc.spec.resources.requests["storage"] == "1Gi"

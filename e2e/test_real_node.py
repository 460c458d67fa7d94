"""The real metaquorum node as a StatefulSet: three voters elect a leader and survive its loss.

Not the operator yet (its quorum operations are a later issue): a hand-written StatefulSet with a
static `controller.quorum.voters` list of the pods' stable DNS names, each pod formatting its PVC
(`metaquorum storage format --ignore-formatted`) and running `metaquorum server start`, with the
per-pod properties passed the way the operator passes them (METAQUORUM_<KEY> env). It checks
what the quorum issue relies on: pods reach each other by name through the headless Service,
listeners on pod IPs, data on PVCs kept across a pod's replacement, readiness from /readyz.

The start script appends the per-pod keys to a copy of the config because `storage format`
reads the file only (`server start` also reads the METAQUORUM_<KEY> overrides).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness import Cluster, wait_for

pytestmark = pytest.mark.e2e

SCRIPT = r"""P=$HOME/server.properties
cp /etc/mq/server.properties "$P"
{ echo "node.id=$METAQUORUM_NODE_ID"; echo "listeners=$METAQUORUM_LISTENERS";
  echo "metadata.log.dir=$METAQUORUM_METADATA_LOG_DIR";
  echo "metaquorum.http.listener=$METAQUORUM_METAQUORUM_HTTP_LISTENER"; } >> "$P"
metaquorum storage format --config "$P" --cluster-id "$CLUSTER_ID" --ignore-formatted &&
exec metaquorum server start --config "$P"
"""


def manifests(ns: str, cluster_id: str) -> list[dict[str, Any]]:
    voters = ",".join(f"{i}@kr-{i}.kr.{ns}.svc.cluster.local:9093" for i in range(3))
    props = (
        f"process.roles=controller\ncontroller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters={voters}\n"
    )
    env = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "CLUSTER_ID", "value": cluster_id},
        {
            "name": "METAQUORUM_NODE_ID",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}
            },
        },
        {"name": "METAQUORUM_LISTENERS", "value": "CONTROLLER://$(POD_IP):9093"},
        {"name": "METAQUORUM_METAQUORUM_HTTP_LISTENER", "value": "$(POD_IP):8080"},
        {"name": "METAQUORUM_METADATA_LOG_DIR", "value": "/data/log"},
    ]
    container = {
        "name": "node",
        "image": "metaquorum/node:e2e",
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", SCRIPT],
        "env": env,
        "ports": [
            {"name": "controller", "containerPort": 9093},
            {"name": "http", "containerPort": 8080},
        ],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 1},
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "cfg", "mountPath": "/etc/mq"},
        ],
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kr", "namespace": ns},
            "data": {"server.properties": props},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kr", "namespace": ns},
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": {"app": "kr"},
                "ports": [{"name": "controller", "port": 9093}],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "kr", "namespace": ns},
            "spec": {
                "serviceName": "kr",
                "replicas": 3,
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "kr"}},
                "template": {
                    "metadata": {"labels": {"app": "kr"}},
                    "spec": {
                        # the image's uid 1000 writes its PV (a real kubelet applies fsGroup)
                        "securityContext": {"fsGroup": 1000},
                        "containers": [container],
                        "volumes": [{"name": "cfg", "configMap": {"name": "kr"}}],
                    },
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        },
    ]


def statuses(cluster: Cluster, ns: str) -> list[dict[str, Any]]:
    return [dict(cluster.pod_http(ns, f"kr-{i}", 8080, "/status")) for i in range(3)]


def agreed_leader(cluster: Cluster, ns: str, after_epoch: int = 0) -> dict[str, Any] | None:
    """One leader, two followers, same epoch (> after_epoch) and leader everywhere; else None."""
    for i in range(3):
        p = cluster.core.read_namespaced_pod(f"kr-{i}", ns)
        if not any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or []):
            return None
    st = statuses(cluster, ns)
    states = sorted(s["state"] for s in st)
    epochs = {s["epoch"] for s in st}
    leaders = {s["leader_id"] for s in st}
    if states != ["follower", "follower", "leader"] or len(epochs) != 1 or len(leaders) != 1:
        return None
    leader = next(s for s in st if s["state"] == "leader")
    return leader if leader["epoch"] > after_epoch else None


def test_three_real_nodes_elect_a_leader_and_survive_its_replacement(
    cluster: Cluster, namespace: str
) -> None:
    ns = namespace
    tool = Path(sys.executable).parent / "metaquorum"
    cluster_id = subprocess.run(
        [str(tool), "storage", "random-uuid"], check=True, capture_output=True, text=True
    ).stdout.strip()
    for m in manifests(ns, cluster_id):
        cluster.kubectl("apply", "-f", "-", input=json.dumps(m))
    leader = wait_for(lambda: agreed_leader(cluster, ns), 120, "a leader agreed by 3 voters")
    assert leader["cluster_id"] == cluster_id
    assert sorted(s["node_id"] for s in statuses(cluster, ns)) == [0, 1, 2]
    old = f"kr-{leader['node_id']}"
    old_uid = cluster.core.read_namespaced_pod(old, ns).metadata.uid
    cluster.kubectl("delete", "pod", old, "-n", ns)
    wait_for(
        lambda: cluster.core.read_namespaced_pod(old, ns).metadata.uid != old_uid,
        60,
        f"{old} recreated",
    )
    new = wait_for(
        lambda: agreed_leader(cluster, ns, leader["epoch"]),
        120,
        "a new epoch agreed by all 3 voters, the replaced pod back",
    )
    assert new["epoch"] > leader["epoch"]
    back = cluster.pod_http(ns, old, 8080, "/status")
    assert back["log_end_offset"] >= leader["high_watermark"]  # its PVC kept the log

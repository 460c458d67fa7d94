"""Real containers (E2E_CLUSTER=local, or kind): the node image in pods on a real kubelet.

What the stand-in cannot show, so these skip there (it runs host processes): the pod runs the
image's non-root user (uid 1000 from node/Dockerfile's USER, the pod says nothing about it) and
its compiled build (the node process has mypyc's extension modules mapped, issue 28); its
init container formats the PVC the provisioner made and the kubelet chowned to the fsGroup; the
image's entrypoint/PATH find `metaquorum`; a second pod reaches the node through its Service's
cluster DNS name (CoreDNS) and ClusterIP (kube-proxy), answering DescribeQuorum; a container
killed by a signal to its process is restarted by the kubelet (restartCount goes up) and the
node comes back on the same data (same directory id). And `helm install` runs the operator in
a container of its own image, non-root, whose mounted token is its ServiceAccount's: the API
server names that account as the token's user.
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import pytest
from harness import OPERATOR_NS, Cluster, wait_for

pytestmark = pytest.mark.e2e

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
PROPS = (
    "node.id=1\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n"
    "controller.quorum.bootstrap.servers=solo.{ns}.svc.cluster.local:9093\n"
    "metadata.log.dir=/data/log\n"
)
START = (
    "cp /etc/mq/server.properties /tmp/p && echo listeners=CONTROLLER://$POD_IP:9093 >> /tmp/p"
    " && echo metaquorum.http.listener=$POD_IP:8080 >> /tmp/p && {cmd}"
)


def manifests(ns: str) -> list[dict[str, Any]]:
    env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    mounts = [{"name": "data", "mountPath": "/data"}, {"name": "cfg", "mountPath": "/etc/mq"}]
    fmt = START.format(
        cmd=f"metaquorum storage format --config /tmp/p --cluster-id {CLUSTER_ID} "
        "--standalone --ignore-formatted"
    )
    run = START.format(cmd="exec metaquorum server start --config /tmp/p")
    pod = {
        "securityContext": {"fsGroup": 1000},
        "initContainers": [
            {"name": "format", "image": "metaquorum/node:e2e", "imagePullPolicy": "Never",
             "command": ["sh", "-c", fmt], "env": env, "volumeMounts": mounts}
        ],
        "containers": [
            {"name": "node", "image": "metaquorum/node:e2e", "imagePullPolicy": "Never",
             "command": ["sh", "-c", run], "env": env, "volumeMounts": mounts,
             "ports": [{"name": "http", "containerPort": 8080}],
             "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"},
                                "periodSeconds": 1}}
        ],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "solo-data"}},
            {"name": "cfg", "configMap": {"name": "solo"}},
        ],
    }  # fmt: skip
    labels = {"app": "solo"}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "solo", "namespace": ns},
         "data": {"server.properties": PROPS.format(ns=ns)}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "solo-data", "namespace": ns},
         "spec": {"accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "64Mi"}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "solo", "namespace": ns},
         "spec": {"selector": labels, "ports": [{"name": "kraft", "port": 9093}]}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "solo-0", "namespace": ns, "labels": labels}, "spec": pod},
    ]  # fmt: skip


def pod_ready(cluster: Cluster, ns: str, name: str) -> Any:
    pod = cluster.core.read_namespaced_pod(name, ns)
    ok = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
    return pod if ok else None


def describe_from_pod(cluster: Cluster, ns: str, pod: str) -> str:
    out = cluster.kubectl(
        "exec", "-n", ns, pod, "-c", "node", "--", "metaquorum", "quorum",
        "--bootstrap-controller", f"solo.{ns}.svc.cluster.local:9093", "describe", "--status",
    )  # fmt: skip
    return out.stdout


def test_node_image_in_a_real_pod(cluster: Cluster, namespace: str) -> None:
    if cluster.kind == "stand-in":
        pytest.skip("the kubelet stand-in runs host processes, not images")
    ns = namespace
    t0 = time.monotonic()
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"kind": "List", "apiVersion": "v1",
                                                           "items": manifests(ns)}))  # fmt: skip
    pod = wait_for(lambda: pod_ready(cluster, ns, "solo-0"), 120, "solo-0 ready")
    print(f"pod ready {time.monotonic() - t0:.1f}s after apply")
    uid = cluster.kubectl("exec", "-n", ns, "solo-0", "-c", "node", "--", "id", "-u").stdout
    assert uid.strip() == "1000", "the image's USER (the pod sets no runAsUser)"
    # issue 28: the node process (the container's PID 1, `exec`ed) runs the compiled build: it
    # has mypyc's shared library mapped (the group's modules import each other inside it, so
    # not every module's own small .so is), and the image's core is the extension module
    maps = cluster.kubectl("exec", "-n", ns, "solo-0", "-c", "node", "--", "cat", "/proc/1/maps")
    assert "site-packages/metaquorum/" in maps.stdout
    assert "__mypyc.cpython-311-x86_64-linux-gnu.so" in maps.stdout
    where = "import metaquorum.core.node as m; print(m.__file__)"
    core = cluster.kubectl("exec", "-n", ns, "solo-0", "-c", "node", "--", "python", "-c", where)
    assert core.stdout.strip().endswith("/metaquorum/core/node.cpython-311-x86_64-linux-gnu.so")
    owner = cluster.kubectl(
        "exec", "-n", ns, "solo-0", "-c", "node", "--", "stat", "-c", "%u:%g", "/data/log"
    ).stdout
    assert owner.strip() == "1000:1000"
    init = pod.status.init_container_statuses[0]
    assert init.state.terminated and init.state.terminated.exit_code == 0
    # through CoreDNS (the Service's name) and kube-proxy (its ClusterIP)
    out = describe_from_pod(cluster, ns, "solo-0")
    assert re.search(r"^LeaderId:\s+1$", out, re.M), out
    dir_id = re.search(r'"directoryId": "([^"]+)"', out)
    assert dir_id, out
    svc_ip = cluster.core.read_namespaced_service("solo", ns).spec.cluster_ip
    assert svc_ip.startswith("10.0.0.")
    # kill the node's process with a signal: the kubelet restarts the container
    before = pod.status.container_statuses[0].restart_count
    cluster.kill_container(ns, "solo-0", "node")
    wait_for(
        lambda: (
            cluster.core.read_namespaced_pod("solo-0", ns)
            .status.container_statuses[0]
            .restart_count
            > before
        ),
        60,
        "the kubelet to restart the killed container",
    )
    wait_for(lambda: pod_ready(cluster, ns, "solo-0"), 60, "solo-0 ready again")
    out = describe_from_pod(cluster, ns, "solo-0")
    assert f'"directoryId": "{dir_id.group(1)}"' in out, "same data after the restart"


def test_the_operator_runs_in_its_own_container_under_its_service_account(
    cluster: Cluster, operator: str
) -> None:
    if cluster.kind == "stand-in":
        pytest.skip("the kubelet stand-in runs host processes, not images")
    dep = cluster.apps.read_namespaced_deployment("metaquorum", operator)
    selector = ",".join(f"{k}={v}" for k, v in dep.spec.selector.match_labels.items())
    pods = cluster.core.list_namespaced_pod(operator, label_selector=selector).items
    running = [p for p in pods if p.status.phase == "Running"]
    assert running, [p.status.phase for p in pods]
    for pod in running:
        name = pod.metadata.name
        assert pod.spec.service_account_name == "metaquorum"
        (status,) = pod.status.container_statuses
        assert status.name == "operator" and status.ready
        assert pod.spec.containers[0].image == "metaquorum/operator:e2e"
        assert "metaquorum/operator:" in status.image, status.image  # the image containerd ran
        assert status.container_id.startswith("containerd://"), status.container_id

        def in_container(*cmd: str, pod: str = name) -> str:
            return cluster.kubectl("exec", "-n", operator, pod, "-c", "operator", "--", *cmd).stdout

        assert in_container("id", "-u").strip() == "1000", "operator/Dockerfile's USER"
        assert "kopf" in in_container("cat", "/proc/1/cmdline"), "kopf is the container's process"
        token = in_container("cat", "/var/run/secrets/kubernetes.io/serviceaccount/token").strip()
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        assert claims["kubernetes.io"]["pod"]["name"] == name, claims
        # the API server's own word on who that token is
        who = json.loads(cluster.kubectl("auth", "whoami", "--token", token, "-o", "json").stdout)
        user = who["status"]["userInfo"]["username"]
        assert user == f"system:serviceaccount:{OPERATOR_NS}:metaquorum", who

"""The control plane and the kubelet stand-in, through the real StatefulSet controller.

A StatefulSet of the trivial HTTP server (placeholder_node.py) reaches 3/3 ready; pods resolve
each other by their stable DNS names; a deleted pod is recreated; a PVC deleted with its pod
comes back empty; a killed process is restarted; a lost disk is empty on the next start.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import Cluster, wait_for

pytestmark = pytest.mark.e2e

STS = """
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {ns}}}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {{app: web}}
  ports: [{{name: http, port: 8080}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: web, namespace: {ns}}}
spec:
  serviceName: web
  replicas: 3
  podManagementPolicy: Parallel
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 5
      # the image runs as uid 1000: its PV must be writable by it (real kubelets apply fsGroup)
      securityContext: {{fsGroup: 1000}}
      containers:
      - name: web
        image: metaquorum/node:e2e
        imagePullPolicy: Never
        command: {command}
        env:
        - {{name: POD_IP, valueFrom: {{fieldRef: {{fieldPath: status.podIP}}}}}}
        - {{name: POD_NAME, valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}}}
        - {{name: METAQUORUM_METADATA_LOG_DIR, value: /data/node}}
        - {{name: METAQUORUM_METAQUORUM_HTTP_LISTENER, value: "$(POD_IP):8080"}}
        ports: [{{name: http, containerPort: 8080}}]
        readinessProbe: {{httpGet: {{path: /readyz, port: http}}, periodSeconds: 1}}
        livenessProbe: {{httpGet: {{path: /healthz, port: http}}, periodSeconds: 1,
                        failureThreshold: 2}}
        volumeMounts: [{{name: data, mountPath: /data}}]
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
"""


def pod_ready(cluster: Cluster, ns: str, name: str, not_uid: str | None = None) -> bool:
    """The pod exists (a new one when not_uid is given) and its Ready condition is True."""
    p = cluster.core.read_namespaced_pod(name, ns)
    conds = p.status.conditions or []
    ready = any(c.type == "Ready" and c.status == "True" for c in conds)
    return ready and p.metadata.uid != not_uid


def ready_replicas(cluster: Cluster, ns: str) -> int:
    return int(cluster.apps.read_namespaced_stateful_set("web", ns).status.ready_replicas or 0)


@pytest.fixture
def web(cluster: Cluster, namespace: str) -> str:
    cluster.kubectl(
        "apply", "-f", "-", input=STS.format(ns=namespace, command=json.dumps(cluster.placeholder))
    )
    wait_for(lambda: ready_replicas(cluster, namespace) == 3, 60, "StatefulSet web 3/3 ready")
    return namespace


def status(cluster: Cluster, ns: str, pod: str) -> dict[str, object]:
    return dict(cluster.pod_http(ns, pod, 8080, "/status"))


def test_statefulset_reaches_three_ready_and_pods_resolve_each_other(
    cluster: Cluster, web: str
) -> None:
    pods = {p.metadata.name: p for p in cluster.core.list_namespaced_pod(web).items}
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    ips = {p.status.pod_ip for p in pods.values()}
    assert len(ips) == 3, "each pod has its own IP"
    (node,) = [n.metadata.name for n in cluster.core.list_node().items]  # single-node targets
    for name, pod in pods.items():
        assert pod.spec.node_name == node
        s = status(cluster, web, name)
        assert s["pod"] == name and str(s["data_dir"]).endswith("/node")
    peer = f"web-2.web.{web}.svc.cluster.local"
    resolved = cluster.pod_http(web, "web-0", 8080, f"/resolve?host={peer}")
    assert resolved == [pods["web-2"].status.pod_ip]
    service = cluster.pod_http(web, "web-1", 8080, f"/resolve?host=web.{web}.svc")
    assert sorted(service) == sorted(ips)


def test_deleted_pod_is_recreated_with_its_volume(cluster: Cluster, web: str) -> None:
    before = status(cluster, web, "web-1")
    old_uid = cluster.core.read_namespaced_pod("web-1", web).metadata.uid
    cluster.kubectl("delete", "pod", "web-1", "-n", web)

    wait_for(lambda: pod_ready(cluster, web, "web-1", old_uid), 60, "web-1 recreated, ready")
    after = status(cluster, web, "web-1")
    assert after["marker"] == before["marker"] and after["fresh"] is False


def test_pvc_deleted_with_its_pod_comes_back_empty(cluster: Cluster, web: str) -> None:
    before = status(cluster, web, "web-2")
    old_pvc = cluster.core.read_namespaced_persistent_volume_claim("data-web-2", web)
    old_pod_uid = cluster.core.read_namespaced_pod("web-2", web).metadata.uid
    cluster.kubectl("delete", "pvc", "data-web-2", "-n", web, "--wait=false")
    cluster.kubectl("delete", "pod", "web-2", "-n", web)

    def new_pvc_bound() -> bool:
        pvc = cluster.core.read_namespaced_persistent_volume_claim("data-web-2", web)
        return pvc.metadata.uid != old_pvc.metadata.uid and pvc.status.phase == "Bound"

    wait_for(new_pvc_bound, 60, "a new data-web-2 PVC, bound")
    wait_for(lambda: pod_ready(cluster, web, "web-2", old_pod_uid), 60, "web-2 back and ready")
    after = status(cluster, web, "web-2")
    assert after["fresh"] is True and after["marker"] != before["marker"]
    wait_for(
        lambda: (
            not any(
                pv.spec.claim_ref and pv.spec.claim_ref.uid == old_pvc.metadata.uid
                for pv in cluster.core.list_persistent_volume().items
            )
        ),
        30,
        "the old PV to be reclaimed",
    )


def test_killed_process_restarts_and_lost_disk_is_empty(cluster: Cluster, web: str) -> None:
    before = status(cluster, web, "web-0")
    restarts = cluster.restarts(web, "web-0", "web")
    cluster.lose_disk(web, "data-web-0")
    assert cluster.kill_container(web, "web-0", "web") > 0

    def restarted() -> bool:
        p = cluster.core.read_namespaced_pod("web-0", web)
        cs = p.status.container_statuses or []
        return bool(cs and cs[0].restart_count > restarts and cs[0].ready)

    wait_for(restarted, 60, "web-0 restarted and ready")
    after = status(cluster, web, "web-0")
    assert after["fresh"] is True and after["marker"] != before["marker"]


def test_a_command_that_cannot_start_is_retried_and_never_ready(
    cluster: Cluster, namespace: str
) -> None:
    """A container whose command does not exist in its image: the node agent reports the
    failed start (never started, a non-zero exit naming the missing file: the stand-in in the
    container's log, a real kubelet as runc's StartError message), retries with back-off, and
    the pod is never ready."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "broken", "namespace": namespace},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "metaquorum/node:e2e",
                    "imagePullPolicy": "Never",
                    "command": ["/nonexistent/metaquorum-binary"],
                }
            ]
        },
    }
    cluster.core.create_namespaced_pod(namespace, pod)

    def retried() -> Any:
        p = cluster.core.read_namespaced_pod("broken", namespace)
        cs = p.status.container_statuses or []
        return cs[0] if cs and cs[0].restart_count >= 2 and not cs[0].ready else None

    cs = wait_for(retried, 60, "two restarts of a command that cannot start")
    assert not cs.started and cs.state.running is None
    ended = cs.state.terminated or cs.last_state.terminated
    assert ended is not None and ended.exit_code != 0
    uid = cluster.core.read_namespaced_pod("broken", namespace).metadata.uid
    said = (ended.message or "") + (cluster.pod_log(namespace, "broken", uid, "c") or "")
    assert "/nonexistent/metaquorum-binary" in said and "no such file" in said.lower(), said
    ready = cluster.core.read_namespaced_pod("broken", namespace).status.conditions or []
    assert not any(c.type == "Ready" and c.status == "True" for c in ready)


def test_failed_liveness_probe_restarts_the_process(cluster: Cluster, web: str) -> None:
    before = status(cluster, web, "web-2")
    cluster.pod_http(web, "web-2", 8080, "/unhealthy?seconds=60")

    def restarted() -> bool:
        p = cluster.core.read_namespaced_pod("web-2", web)
        cs = p.status.container_statuses or []
        return bool(cs and cs[0].restart_count >= 1 and cs[0].ready)

    wait_for(restarted, 60, "web-2 restarted after failing its liveness probe")
    after = status(cluster, web, "web-2")
    assert after["marker"] == before["marker"] and after["fresh"] is False

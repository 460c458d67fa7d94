"""The operator, installed by the chart and running with kopf, against the real control plane.

`kubectl apply` of a sample MetadataQuorum yields the StatefulSet, Services, PDB and ConfigMap;
pods run and the status and printer columns show them; scaling the CR changes the StatefulSet
one replica at a time; a config change rolls the pods; deleting the CR cleans up; bad specs are
refused by the apiserver with a clear message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Cluster, wait_for

pytestmark = pytest.mark.e2e

GROUP, VERSION, PLURAL = "metaquorum.dev", "v1alpha1", "metadataquorums"


SAMPLE = Path(__file__).resolve().parent / "samples" / "metadataquorum.yaml"


def sample(ns: str, name: str = "quorum", **spec: Any) -> str:
    """e2e/samples/metadataquorum.yaml in namespace ns, with the e2e image and `spec` merged,
    run as the placeholder workload (quorum mode "none": it scales one replica at a time, which
    a static quorum of the real node refuses; test_operator_real_node.py runs the real node)."""
    body = yaml.safe_load(SAMPLE.read_text())
    body["metadata"].update({"name": name, "namespace": ns})
    body["metadata"]["annotations"] = {"metaquorum.dev/quorum-mode": "none"}
    body["spec"].update({"image": "metaquorum/node:e2e", "imagePullPolicy": "Never", **spec})
    return json.dumps(body)


def mq(cluster: Cluster, ns: str, name: str = "quorum") -> dict[str, Any]:
    obj = cluster.custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
    return dict(obj)


def running(cluster: Cluster, ns: str, replicas: int) -> bool:
    st = mq(cluster, ns).get("status") or {}
    gen = mq(cluster, ns)["metadata"]["generation"]
    return (
        st.get("phase") == "Running"
        and st.get("readyReplicas") == replicas
        and st.get("observedGeneration") == gen
    )


@pytest.fixture
def quorum(cluster: Cluster, operator: str, namespace: str) -> str:
    cluster.kubectl("apply", "-f", "-", input=sample(namespace))
    wait_for(lambda: running(cluster, namespace, 3), 90, "MetadataQuorum Running with 3 ready")
    return namespace


def test_sample_yields_owned_objects_running_pods_and_status(cluster: Cluster, quorum: str) -> None:
    ns = quorum
    owner_uid = mq(cluster, ns)["metadata"]["uid"]
    sts = cluster.apps.read_namespaced_stateful_set("quorum", ns)
    assert sts.spec.pod_management_policy == "Parallel"
    assert sts.spec.update_strategy.type == "OnDelete"
    assert sts.spec.volume_claim_templates[0].metadata.name == "data"
    objs = [
        sts,
        cluster.core.read_namespaced_service("quorum", ns),
        cluster.core.read_namespaced_service("quorum-headless", ns),
        cluster.core.read_namespaced_config_map("quorum-config", ns),
        client_policy(cluster).read_namespaced_pod_disruption_budget("quorum", ns),
    ]
    for o in objs:
        refs = o.metadata.owner_references
        assert [(r.uid, r.controller) for r in refs] == [(owner_uid, True)], o.metadata.name
    pdb = objs[-1]
    assert pdb.spec.max_unavailable == 1
    assert cluster.core.read_namespaced_service("quorum-headless", ns).spec.cluster_ip == "None"
    # the pods run the node command with the operator's config mounted
    for i in range(3):
        s = cluster.pod_http(ns, f"quorum-{i}", 8080, "/status")
        assert "process.roles=controller" in s["config"]
        assert "controller.quorum.election.timeout.ms=1000" in s["config"]
        assert s["node_id"] == str(i)  # from the pod-index label, as METAQUORUM_NODE_ID
        assert s["data_dir"].endswith("/data")  # metadata.log.dir on the PVC
        pod_ip = cluster.core.read_namespaced_pod(f"quorum-{i}", ns).status.pod_ip
        assert s["listeners"] == f"CONTROLLER://{pod_ip}:9093"
        if cluster.kind == "local":  # the data dir is inside this pod's own PV
            pods = cluster.standin("/pods")
            vols = {p["name"]: p["volumes"] for p in pods if p["namespace"] == ns}
            assert s["data_dir"].startswith(vols[f"quorum-{i}"][f"data-quorum-{i}"] + "/")
        assert f"quorum-{i}.quorum-headless.{ns}.svc.cluster.local:9093" in s["config"]
    status = mq(cluster, ns)["status"]
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["Ready"]["status"] == "True"
    assert conds["ResourcesReconciled"]["status"] == "True"
    assert status["labelSelector"] == (
        "app.kubernetes.io/instance=quorum,app.kubernetes.io/name=metaquorum"
    )
    table = cluster.kubectl("get", "metadataquorum", "quorum", "-n", ns).stdout.split("\n")
    assert table[0].split() == ["NAME", "REPLICAS", "READY", "LEADER", "EPOCH", "PHASE", "AGE"]
    assert table[1].split()[:4] == ["quorum", "3", "3", "Running"]  # leader/epoch unknown yet
    events = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum"
    ).items
    reasons = {e.reason for e in events}
    assert {"Created", "Scaled"} <= reasons


def client_policy(cluster: Cluster) -> Any:
    from kubernetes import client

    return client.PolicyV1Api(cluster.api)


def test_scaling_the_cr_changes_the_statefulset(cluster: Cluster, quorum: str) -> None:
    ns = quorum
    cluster.kubectl("scale", "metadataquorum", "quorum", "-n", ns, "--replicas=5")
    wait_for(lambda: running(cluster, ns, 5), 90, "5 ready replicas")
    assert cluster.apps.read_namespaced_stateful_set("quorum", ns).spec.replicas == 5
    scaled = [
        e.message
        for e in cluster.core.list_namespaced_event(
            ns, field_selector="involvedObject.kind=MetadataQuorum,reason=Scaled"
        ).items
    ]
    assert any("to 4 replicas" in m for m in scaled) and any("to 5 replicas" in m for m in scaled)
    cluster.kubectl(
        "patch",
        "metadataquorum",
        "quorum",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec": {"replicas": 3}}',
    )
    wait_for(lambda: running(cluster, ns, 3), 90, "back to 3 ready replicas")
    assert cluster.apps.read_namespaced_stateful_set("quorum", ns).spec.replicas == 3


def test_config_change_rolls_pods_and_keeps_data(cluster: Cluster, quorum: str) -> None:
    ns = quorum
    before = cluster.pod_http(ns, "quorum-0", 8080, "/status")
    cluster.kubectl(
        "patch",
        "metadataquorum",
        "quorum",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec": {"config": {"controller.quorum.fetch.timeout.ms": "3000"}}}',
    )

    def rolled() -> bool:
        for i in range(3):
            s = cluster.pod_http(ns, f"quorum-{i}", 8080, "/status")
            if "controller.quorum.fetch.timeout.ms=3000" not in s["config"]:
                return False
        return running(cluster, ns, 3)

    wait_for(rolled, 120, "every pod restarted with the new config")
    after = cluster.pod_http(ns, "quorum-0", 8080, "/status")
    assert after["marker"] == before["marker"] and after["fresh"] is False


def test_status_follows_what_the_operator_observes(cluster: Cluster, quorum: str) -> None:
    ns = quorum

    def ready_condition() -> dict[str, Any]:
        conds = mq(cluster, ns)["status"]["conditions"]
        return dict(next(c for c in conds if c["type"] == "Ready"))

    since = ready_condition()["lastTransitionTime"]
    cluster.pod_http(ns, "quorum-1", 8080, "/unready?seconds=10")

    def degraded() -> dict[str, Any] | None:
        st = mq(cluster, ns)["status"]
        c = next(c for c in st["conditions"] if c["type"] == "Ready")
        down = c["status"] == "False" and "quorum-1" in c["message"]
        return st if down and st["phase"] == "Degraded" and st["readyReplicas"] == 2 else None

    wait_for(degraded, 10, "Ready=False, Degraded, 2 ready while quorum-1 is unready")
    wait_for(lambda: running(cluster, ns, 3), 60, "Running again")
    assert ready_condition()["lastTransitionTime"] >= since


def test_pdb_allows_one_voter_down(cluster: Cluster, quorum: str) -> None:
    from kubernetes.client.exceptions import ApiException

    ns = quorum
    policy = client_policy(cluster)
    wait_for(
        lambda: (
            policy.read_namespaced_pod_disruption_budget("quorum", ns).status.disruptions_allowed
            == 1
        ),
        30,
        "the disruption controller to allow 1",
    )

    def evict(pod: str) -> None:
        cluster.core.create_namespaced_pod_eviction(
            pod,
            ns,
            {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": pod, "namespace": ns},
            },
        )

    evict("quorum-0")
    with pytest.raises(ApiException) as refused:
        evict("quorum-1")
    assert refused.value.status == 429
    wait_for(lambda: running(cluster, ns, 3), 60, "the evicted voter back")


def test_an_object_it_does_not_own_is_left_alone(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    ns = namespace
    cluster.core.create_namespaced_config_map(
        ns, {"metadata": {"name": "quorum-config"}, "data": {"mine": "yes"}}
    )
    cluster.kubectl("apply", "-f", "-", input=sample(ns))

    def warned() -> bool:
        events = cluster.core.list_namespaced_event(
            ns, field_selector="involvedObject.kind=MetadataQuorum,reason=NotOwned"
        ).items
        return any("ConfigMap quorum-config" in e.message for e in events)

    wait_for(warned, 30, "a NotOwned warning event")
    assert cluster.core.read_namespaced_config_map("quorum-config", ns).data == {"mine": "yes"}
    assert cluster.apps.list_namespaced_stateful_set(ns).items == []


def test_deleting_the_cr_cleans_up(cluster: Cluster, quorum: str) -> None:
    ns = quorum
    cluster.kubectl("delete", "metadataquorum", "quorum", "-n", ns, "--timeout=60s")

    def gone() -> bool:
        left = cluster.kubectl(
            "get", "statefulsets,services,configmaps,pdb,pods,pvc", "-n", ns, "-o", "name"
        ).stdout.split()
        return [x for x in left if x != "configmap/kube-root-ca.crt"] == []

    wait_for(gone, 60, "every owned object, pod and PVC gone")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"replicas": 0}, "should be greater than or equal to 1"),
        ({"replicas": 10}, "should be less than or equal to 9"),
        ({"config": {"node.id": "1"}}, "may not set keys the operator manages"),
        ({"config": {"Not A Kafka Name": "1"}}, "must be Kafka property names"),
        ({"tls": {"enabled": True}}, "spec.tls.secretName is required"),
        ({"listeners": {"controllerPort": 9000, "httpPort": 9000}}, "must differ"),
        ({"storage": {"size": "lots"}}, "must be a positive quantity"),
        ({"imagePullPolicy": "Sometimes"}, "Unsupported value"),
        ({"clusterId": "-not-a-kafka-uuid"}, "spec.clusterId in body should match"),
    ],
)
def test_bad_spec_is_refused(
    cluster: Cluster, operator: str, namespace: str, spec: dict[str, Any], message: str
) -> None:
    proc = cluster.kubectl("apply", "-f", "-", input=sample(namespace, "bad", **spec), check=False)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_storage_is_immutable(cluster: Cluster, operator: str, namespace: str) -> None:
    cluster.kubectl("apply", "-f", "-", input=sample(namespace, "fixed"))
    proc = cluster.kubectl(
        "patch",
        "metadataquorum",
        "fixed",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec": {"storage": {"size": "5Gi"}}}',
        check=False,
    )
    assert proc.returncode != 0 and "immutable" in proc.stderr, proc.stderr

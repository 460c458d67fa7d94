"""The operator, installed by the chart and running with kopf, against the real control plane.

`kubectl apply` of a sample MetadataQuorum yields the StatefulSet (with its format init
container), Services, PDB and ConfigMap; the real node's pods run and the status and printer
columns show them; a config change rolls the pods one at a time, the leader last, keeping every
voter's directory; the PDB allows one voter down; deleting the CR cleans up; bad specs are
refused by the apiserver with a clear message. Voter changes: test_operator_real_node.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import Cluster, wait_for
from quorums import E2E_SPEC

pytestmark = pytest.mark.e2e

GROUP, VERSION, PLURAL = "metaquorum.dev", "v1alpha1", "metadataquorums"


SAMPLE = Path(__file__).resolve().parent / "samples" / "metadataquorum.yaml"


def sample(ns: str, name: str = "quorum", **spec: Any) -> str:
    """e2e/samples/metadataquorum.yaml in namespace ns, with the e2e image and `spec` merged."""
    body = yaml.safe_load(SAMPLE.read_text())
    body["metadata"].update({"name": name, "namespace": ns})
    body["spec"].update({**E2E_SPEC, **spec})
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
    wait_for(lambda: running(cluster, namespace, 3), 240, "MetadataQuorum Running with 3 ready")
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
    (init,) = sts.spec.template.spec.init_containers
    (node,) = sts.spec.template.spec.containers
    # spec.readinessProbe's period (E2E_SPEC) over the default's failureThreshold
    assert (node.readiness_probe.period_seconds, node.readiness_probe.failure_threshold) == (1, 3)
    assert node.readiness_probe.http_get.path == "/readyz"
    assert init.name == "format" and init.command[:2] == ["sh", "-c"]
    # the pods run the node with the operator's config, each on its own formatted volume
    for i in range(3):
        s = cluster.pod_http(ns, f"quorum-{i}", 8080, "/status")
        assert s["node_id"] == i  # from the pod-index label, as METAQUORUM_NODE_ID
        assert s["cluster_id"] == mq(cluster, ns)["spec"]["clusterId"]
        if cluster.kind != "kind":  # the data dir is inside this pod's own PV
            pv = cluster.pv_path(ns, f"data-quorum-{i}")
            assert (pv / "data" / "meta.properties").exists()
    status = mq(cluster, ns)["status"]
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["Available"]["status"] == "True"
    assert conds["Progressing"]["status"] == "False"
    assert conds["Degraded"]["status"] == "False"
    assert status["labelSelector"] == (
        "app.kubernetes.io/instance=quorum,app.kubernetes.io/name=metaquorum"
    )
    table = cluster.kubectl("get", "metadataquorum", "quorum", "-n", ns).stdout.split("\n")
    assert table[0].split() == [
        "NAME", "REPLICAS", "READY", "VOTERS", "LEADER", "EPOCH", "PHASE", "OPERATION", "AGE"
    ]  # fmt: skip
    row = table[1].split()
    assert row[:2] == ["quorum", "3"] and row[2].endswith("/3") and row[3] == "0,1,2"
    events = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum"
    ).items
    reasons = {e.reason for e in events}
    # every pod started with the StatefulSet (pods 1 and 2 as observers): no scale step
    assert {"Created", "VoterAdded"} <= reasons and "Scaled" not in reasons


def client_policy(cluster: Cluster) -> Any:
    from kubernetes import client

    return client.PolicyV1Api(cluster.api)


def test_config_change_rolls_pods_leader_last_and_keeps_data(cluster: Cluster, quorum: str) -> None:
    ns = quorum
    before = mq(cluster, ns)["status"]
    dirs = {v["id"]: v["directoryId"] for v in before["voters"]}
    uids = cluster.pod_uids(ns, 3)
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
        now = cluster.pod_uids(ns, 3)
        return all(now[i] != uids[i] for i in range(3)) and running(cluster, ns, 3)

    wait_for(rolled, 300, "every pod replaced with the new config")
    after = mq(cluster, ns)["status"]
    assert {v["id"]: v["directoryId"] for v in after["voters"]} == dirs  # the data stayed
    events = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum,reason=ConfigChanged"
    ).items
    order = [e.message.split()[2] for e in sorted(events, key=lambda e: e.first_timestamp)]
    assert sorted(order) == ["quorum-0", "quorum-1", "quorum-2"]
    assert order[0] != f"quorum-{before['leader']}"  # followers first, the leader later


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
        (
            {"readinessProbe": {"periodSeconds": 0}},
            "spec.readinessProbe.periodSeconds in body should be greater than or equal to 1",
        ),
    ],
)
def test_bad_spec_is_refused(
    cluster: Cluster, operator: str, namespace: str, spec: dict[str, Any], message: str
) -> None:
    proc = cluster.kubectl("apply", "-f", "-", input=sample(namespace, "bad", **spec), check=False)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_storage_may_grow_but_not_shrink_nor_change_class(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    cluster.kubectl("apply", "-f", "-", input=sample(namespace, "fixed"))

    def patch(storage: str) -> Any:
        args = ["metadataquorum", "fixed", "-n", namespace, "--type=merge"]
        body = f'{{"spec": {{"storage": {storage}}}}}'
        return cluster.kubectl("patch", *args, "-p", body, check=False)

    proc = patch('{"size": "512Mi"}')
    assert proc.returncode != 0 and "may grow but not shrink" in proc.stderr, proc.stderr
    proc = patch('{"storageClassName": "other"}')
    assert proc.returncode != 0 and "immutable" in proc.stderr, proc.stderr
    assert patch('{"size": "2Gi"}').returncode == 0

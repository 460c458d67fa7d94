"""The Helm chart: lint, template, schema, and the rendered objects accepted by the apiserver."""

from __future__ import annotations

import pytest
from harness import CHART, Cluster, render

pytestmark = pytest.mark.e2e


def test_helm_lint_strict(cluster: Cluster) -> None:
    out = cluster.helm("lint", "--strict", CHART)
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout


def test_template_renders_the_operator_objects(cluster: Cluster) -> None:
    docs = render(cluster)
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Deployment", "ServiceAccount"]
    dep = next(d for d in docs if d["kind"] == "Deployment")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["command"][:3] == ["kopf", "run", "--standalone"]
    assert "--all-namespaces" in c["command"]
    assert dep["spec"]["strategy"]["type"] == "Recreate"
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    for rule in role["rules"]:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"]
        assert "secrets" not in rule["resources"]
        if "update" in rule["verbs"]:  # only for blockOwnerDeletion
            assert rule["resources"] == ["metadataquorums/finalizers"]
        if "delete" in rule["verbs"]:  # the OnDelete roller; spec.backup's objects once removed
            assert rule["resources"] in (["pods"], ["serviceaccounts"], ["cronjobs"])


def test_values_select_namespace_and_catch_up(cluster: Cluster) -> None:
    docs = render(
        cluster,
        "--set",
        "operator.watchNamespace=team-a",
        "--set",
        "operator.catchUp.holdMs=500",
    )
    dep = next(d for d in docs if d["kind"] == "Deployment")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert "--namespace=team-a" in c["command"] and "--all-namespaces" not in c["command"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["METAQUORUM_CATCH_UP_HOLD_MS"] == "500"
    assert env["METAQUORUM_CATCH_UP_MAX_LAG_RECORDS"] == "100"


def test_two_replicas_use_kopf_peering_with_a_pdb(cluster: Cluster) -> None:
    docs = render(cluster, "--set", "operator.replicas=2")
    dep = next(d for d in docs if d["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 2 and dep["spec"]["strategy"]["type"] == "RollingUpdate"
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert "--standalone" not in c["command"] and "--peering=mq-metaquorum" in c["command"]
    env = {e["name"]: e for e in c["env"]}
    assert env["POD_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    peering = next(d for d in docs if d["kind"] == "ClusterKopfPeering")
    assert peering["metadata"]["name"] == "mq-metaquorum"
    pdb = next(d for d in docs if d["kind"] == "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    scoped = render(cluster, "--set", "operator.replicas=2", "--set", "operator.watchNamespace=a")
    kopf = next(d for d in scoped if d["kind"] == "KopfPeering")
    assert kopf["metadata"]["namespace"] == "a"


def test_service_monitors_behind_a_value(cluster: Cluster) -> None:
    docs = render(cluster, "--set", "metrics.serviceMonitor.enabled=true")
    monitors = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ServiceMonitor"}
    assert sorted(monitors) == ["mq-metaquorum-nodes", "mq-metaquorum-operator"]
    nodes = monitors["mq-metaquorum-nodes"]["spec"]
    assert nodes["namespaceSelector"] == {"any": True}
    assert nodes["selector"]["matchLabels"]["metaquorum.dev/metrics"] == "true"
    assert nodes["endpoints"][0]["port"] == "http"
    svc = next(d for d in docs if d["kind"] == "Service")
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics"


def test_values_schema_refuses_typos(cluster: Cluster) -> None:
    proc = cluster.helm("template", "mq", CHART, "--set", "operater.logLevel=debug", check=False)
    assert proc.returncode != 0
    assert "operater" in proc.stderr
    proc = cluster.helm("template", "mq", CHART, "--set", "operator.logLevel=loud", check=False)
    assert proc.returncode != 0


def test_rendered_objects_pass_server_side_validation(cluster: Cluster) -> None:
    out = cluster.helm("template", "mq", CHART, "--namespace", "default").stdout
    res = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=out)
    assert res.stdout.count("(server dry run)") == 4, res.stdout

"""The chart's RBAC for TLS Secrets (templates/secrets-rbac.yaml): `get` on Secrets only, per
namespace by a Role (operator.watchNamespace, rbac.secretNamespaces), cluster-wide only when
asked (rbac.secretsClusterWide), never in the main ClusterRole; the values schema refuses a bad
namespace name. test_tls_operator.py shows the Role at work (the operator reads a TLS Secret
under its own ServiceAccount)."""

from __future__ import annotations

from typing import Any

import pytest
from harness import CHART, Cluster, render

pytestmark = pytest.mark.e2e


def secret_rules(docs: list[dict[str, Any]]) -> dict[tuple[str, str | None], list[Any]]:
    out = {}
    for d in docs:
        if d["kind"] in ("Role", "ClusterRole"):
            rules = [r for r in d["rules"] if "secrets" in r["resources"]]
            if rules:
                out[(d["kind"], d["metadata"].get("namespace"))] = rules
    return out


def test_no_secret_access_by_default(cluster: Cluster) -> None:
    assert secret_rules(render(cluster)) == {}


def test_secret_get_per_namespace_and_cluster_wide_only_when_asked(cluster: Cluster) -> None:
    docs = render(
        cluster,
        "--set", "operator.watchNamespace=team-a",
        "--set", "rbac.secretNamespaces={team-a,team-b}",
    )  # fmt: skip
    rules = secret_rules(docs)
    assert set(rules) == {("Role", "team-a"), ("Role", "team-b")}  # team-a once
    for (_, ns), rs in rules.items():
        assert rs == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
        (binding,) = [
            d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["namespace"] == ns
        ]
        assert binding["subjects"][0]["namespace"] == "ops"  # the release's ServiceAccount
    wide = secret_rules(render(cluster, "--set", "rbac.secretsClusterWide=true"))
    assert list(wide) == [("ClusterRole", None)]
    assert wide[("ClusterRole", None)][0]["verbs"] == ["get"]
    # the rendered objects are accepted by the apiserver
    out = cluster.helm(
        "template", "mq", CHART, "--namespace", "default",
        "--set", "rbac.secretNamespaces={default}", "--set", "rbac.secretsClusterWide=true",
    ).stdout  # fmt: skip
    cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=out)


def test_values_schema_refuses_a_bad_namespace(cluster: Cluster) -> None:
    proc = cluster.helm(
        "template", "mq", CHART, "--set", "rbac.secretNamespaces={Not_A_Namespace}", check=False
    )
    assert proc.returncode != 0 and "secretNamespaces" in proc.stderr, proc.stderr

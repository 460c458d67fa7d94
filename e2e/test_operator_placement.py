"""Pod placement on the real kubelet target: spec.podTemplate in the StatefulSet, the default
soft spread, an unsatisfiable nodeSelector named in the status, unknown fields refused.

- One voter (fast). Without a podTemplate the StatefulSet's pod template carries the default
  spread (kubernetes.io/hostname and topology.kubernetes.io/zone, ScheduleAnyway) and the pod
  runs. A podTemplate with a nodeSelector (the node's own hostname label), a
  topologySpreadConstraint of its own and a label: rendered into the StatefulSet (the default
  spread gone), the pod rolled and back Running with them. A nodeSelector no node has: the
  pod, rolled, stays Pending; Degraded True, reason PodUnschedulable, with the scheduler's
  message and the fix, and a Warning Event PodUnschedulable.
- `kubectl apply` of a podTemplate with a field the CRD does not know is refused.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import Cluster, wait_for
from quorums import E2E_SPEC, GROUP, PLURAL, VERSION, cond, mq, settled, use_pod_names

pytestmark = pytest.mark.e2e


def apply(cluster: Cluster, ns: str, spec: dict[str, Any], check: bool = True) -> Any:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MetadataQuorum",
        "metadata": {"name": "quorum", "namespace": ns},
        "spec": {
            "replicas": 1,
            **E2E_SPEC,
            "storage": {"size": "1Gi", "deleteClaimsOnDelete": True},
            **spec,
        },
    }
    return cluster.kubectl("apply", "-f", "-", input=json.dumps(body), check=check)


def pod_spec(cluster: Cluster, ns: str) -> Any:
    return cluster.apps.read_namespaced_stateful_set("quorum", ns).spec.template.spec


def test_pod_template_default_spread_and_an_unsatisfiable_node_selector(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    use_pod_names(cluster)
    ns = namespace
    apply(cluster, ns, {})
    wait_for(lambda: settled(cluster, ns, [0]), 180, "1 voter Running")
    spread = pod_spec(cluster, ns).topology_spread_constraints
    assert [(c.topology_key, c.when_unsatisfiable, c.max_skew) for c in spread] == [
        ("kubernetes.io/hostname", "ScheduleAnyway", 1),
        ("topology.kubernetes.io/zone", "ScheduleAnyway", 1),
    ]
    assert spread[0].label_selector.match_labels["app.kubernetes.io/instance"] == "quorum"

    (node,) = cluster.core.list_node().items
    host = node.metadata.labels["kubernetes.io/hostname"]
    mine = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "quorum"}},
    }
    uid = cluster.pod_uids(ns, 1)[0]
    template = {
        "nodeSelector": {"kubernetes.io/hostname": host},
        "topologySpreadConstraints": [mine],
        "labels": {"team": "platform"},
    }
    apply(cluster, ns, {"podTemplate": template})

    def rolled() -> Any:
        pods = cluster.core.list_namespaced_pod(ns, label_selector="team=platform").items
        ready = [
            p
            for p in pods
            if p.metadata.uid != uid
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        ]
        return ready and settled(cluster, ns, [0])

    wait_for(rolled, 180, "pod 0 rolled onto the podTemplate and Running")
    spec = pod_spec(cluster, ns)
    assert spec.node_selector == {"kubernetes.io/hostname": host}
    assert [(c.topology_key, c.when_unsatisfiable) for c in spec.topology_spread_constraints] == [
        ("kubernetes.io/hostname", "DoNotSchedule")
    ]

    template["nodeSelector"] = {"metaquorum.dev/e2e-no-such-node": "anywhere"}
    apply(cluster, ns, {"podTemplate": template})

    def unschedulable() -> dict[str, Any] | None:
        c = cond(mq(cluster, ns), "Degraded")
        return c if c.get("reason") == "PodUnschedulable" and c["status"] == "True" else None

    degraded = wait_for(unschedulable, 120, "Degraded PodUnschedulable")
    assert "quorum-0: 0/1 nodes are available" in degraded["message"], degraded
    assert "node affinity/selector" in degraded["message"], degraded
    assert "fix spec.podTemplate" in degraded["message"]
    p = cluster.core.read_namespaced_pod("quorum-0", ns)
    assert p.status.phase == "Pending"
    assert p.spec.node_selector == {"metaquorum.dev/e2e-no-such-node": "anywhere"}
    warnings = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum,reason=PodUnschedulable"
    ).items
    assert warnings and warnings[0].type == "Warning"
    assert mq(cluster, ns)["status"]["phase"] == "Degraded"


def test_an_unknown_pod_template_field_is_refused(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    out = apply(cluster, namespace, {"podTemplate": {"nodeSelectr": {"a": "b"}}}, check=False)
    assert out.returncode != 0
    assert 'unknown field "spec.podTemplate.nodeSelectr"' in out.stderr, out.stderr
    found = cluster.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert found["items"] == []

"""spec.podTemplate rendered into the StatefulSet (placement.py), the default soft spread, the
CRD's schema of podTemplate, and a pod no node takes named in Degraded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from metaquorum_operator import builders, placement
from metaquorum_operator.model import Names, Owner, QuorumSpec
from metaquorum_operator.observed import (
    Observed,
    ObservedObject,
    ObservedPod,
    ObservedStatefulSet,
)
from metaquorum_operator.planner import Wait
from metaquorum_operator.status import UNSCHEDULABLE_REASON, compute_status

from tests.unit.operator.test_kube import fake_kube, pod

ROOT = Path(__file__).resolve().parents[3]
NAMES = Names("q", "ns")
OWNER = Owner("q", "uid-1")
SPREAD = {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"}


def pod_template(template: dict[str, Any]) -> dict[str, Any]:
    spec = QuorumSpec.from_spec({"podTemplate": template})
    result: dict[str, Any] = builders.statefulset(spec, NAMES, OWNER, 3)["spec"]["template"]
    return result


def test_without_a_pod_template_the_voters_spread_softly_across_nodes_and_zones() -> None:
    spread = pod_template({})["spec"]["topologySpreadConstraints"]
    assert [(c["topologyKey"], c["whenUnsatisfiable"], c["maxSkew"]) for c in spread] == [
        ("kubernetes.io/hostname", "ScheduleAnyway", 1),
        ("topology.kubernetes.io/zone", "ScheduleAnyway", 1),
    ]
    assert all(c["labelSelector"]["matchLabels"] == NAMES.selector_labels() for c in spread)


def test_the_users_spread_replaces_the_default_and_the_placement_fields_are_rendered() -> None:
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    toleration = {"key": "dedicated", "operator": "Equal", "value": "kraft", "effect": "NoSchedule"}
    t = pod_template(
        {
            "topologySpreadConstraints": [SPREAD],
            "nodeSelector": {"disk": "ssd"},
            "affinity": affinity,
            "tolerations": [toleration],
            "priorityClassName": "system-cluster-critical",
            "serviceAccountName": "kraft",
        }
    )["spec"]
    assert t["topologySpreadConstraints"] == [SPREAD]
    assert t["nodeSelector"] == {"disk": "ssd"}
    assert t["affinity"] == affinity
    assert t["tolerations"] == [toleration]
    assert t["priorityClassName"] == "system-cluster-critical"
    assert t["serviceAccountName"] == "kraft"
    assert [c["name"] for c in t["containers"]] == ["node"]  # the operator's containers stay


def test_labels_annotations_and_security_context_merge_with_the_operators_winning() -> None:
    t = pod_template(
        {
            "labels": {"team": "platform", "app.kubernetes.io/component": "mine"},
            "annotations": {"a": "1", builders.CONFIG_HASH: "mine"},
            "securityContext": {"runAsUser": 2000, "seccompProfile": {"type": "RuntimeDefault"}},
        }
    )
    assert t["metadata"]["labels"]["team"] == "platform"
    assert t["metadata"]["labels"]["app.kubernetes.io/component"] == "controller"
    assert t["metadata"]["annotations"]["a"] == "1"
    assert t["metadata"]["annotations"][builders.CONFIG_HASH] != "mine"
    assert t["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 2000,
        "fsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_a_pod_template_change_changes_the_statefulsets_hash() -> None:
    def h(template: dict[str, Any]) -> str:
        spec = QuorumSpec.from_spec({"podTemplate": template})
        sts = builders.statefulset(spec, NAMES, OWNER, 3)
        return str(sts["metadata"]["annotations"][builders.SPEC_HASH])

    assert h({}) != h({"nodeSelector": {"disk": "ssd"}})
    assert h({}) == h({})


def _crd_pod_template() -> dict[str, Any]:
    crd = yaml.safe_load((ROOT / "crds" / "metadataquorums.metaquorum.dev.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    result: dict[str, Any] = spec["properties"]["podTemplate"]
    return result


def test_the_crd_types_pod_template_so_unknown_fields_are_not_preserved() -> None:
    schema = _crd_pod_template()
    assert "x-kubernetes-preserve-unknown-fields" not in schema
    assert set(schema["properties"]) == {
        "affinity",
        "tolerations",
        "nodeSelector",
        "topologySpreadConstraints",
        "priorityClassName",
        "serviceAccountName",
        "labels",
        "annotations",
        "securityContext",
    }
    # only the three parts of affinity keep what they are given (core/v1 passes them on)
    affinity = schema["properties"]["affinity"]
    assert "x-kubernetes-preserve-unknown-fields" not in affinity
    assert all(p["x-kubernetes-preserve-unknown-fields"] for p in affinity["properties"].values())


def test_a_pending_pods_scheduler_message_is_read_from_its_pod_scheduled_condition() -> None:
    message = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    unplaced = pod("q-0")
    unplaced.status = client.V1PodStatus(
        phase="Pending",
        conditions=[
            client.V1PodCondition(
                type="PodScheduled", status="False", reason="Unschedulable", message=message
            )
        ],
    )
    placed = pod("q-1")
    placed.status = client.V1PodStatus(
        conditions=[client.V1PodCondition(type="PodScheduled", status="True")]
    )
    observed = fake_kube([unplaced, placed]).observe(NAMES)
    assert [p.unschedulable for p in observed.pods] == [message, None]
    assert placement.unschedulable(None) is None


def test_an_unschedulable_pod_turns_degraded_with_the_schedulers_reason_and_the_fix() -> None:
    sts = ObservedStatefulSet(obj=ObservedObject("h"), replicas=3, ready_replicas=2)
    why = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    pods = [
        ObservedPod("q-0", 0, True),
        ObservedPod("q-1", 1, True),
        ObservedPod("q-2", 2, False, unschedulable=why),
    ]
    st = compute_status(
        QuorumSpec(),
        NAMES,
        generation=1,
        observed=Observed(statefulset=sts, pods=pods, formed=True),
        quorum=None,
        action=Wait("waiting for pods to be ready: q-2"),
        now="T",
        previous=None,
    )
    (degraded,) = [c for c in st["conditions"] if c["type"] == "Degraded"]
    assert degraded["status"] == "True"
    assert degraded["reason"] == UNSCHEDULABLE_REASON
    assert f"q-2: {why}" in degraded["message"]
    assert "spec.podTemplate" in degraded["message"]
    assert st["phase"] == "Degraded"


def test_an_unbound_claim_is_named_as_a_storage_problem_not_a_placement_one() -> None:
    sts = ObservedStatefulSet(obj=ObservedObject("h"), replicas=1)
    # the real kube-scheduler's message (v1.34) for a pod whose PVC no provisioner binds
    why = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
    st = compute_status(
        QuorumSpec(),
        NAMES,
        generation=1,
        observed=Observed(statefulset=sts, pods=[ObservedPod("q-0", 0, False, unschedulable=why)]),
        quorum=None,
        action=Wait("no leader"),
        now="T",
        previous=None,
    )
    (degraded,) = [c for c in st["conditions"] if c["type"] == "Degraded"]
    assert degraded["reason"] == UNSCHEDULABLE_REASON
    assert f"q-0: {why}: its PVC is not bound" in degraded["message"]
    assert "spec.podTemplate" not in degraded["message"]


def _apply_json_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 `add` as the apiserver applies it (the only op statefulset_json_patch uses)."""
    import copy

    out = copy.deepcopy(obj)
    for op in ops:
        assert op["op"] == "add"
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]
        ]
        node = out
        for p in parents:
            node = node[p]
        node[last] = op["value"]
    return out


def test_a_node_selector_key_removed_from_the_pod_template_leaves_the_statefulset() -> None:
    """The e2e run saw it: a JSON merge patch of the StatefulSet kept the old nodeSelector key
    next to the new one; the operator's JSON patch replaces the template whole."""
    old = QuorumSpec.from_spec({"podTemplate": {"nodeSelector": {"kubernetes.io/hostname": "n"}}})
    new = QuorumSpec.from_spec({"podTemplate": {"nodeSelector": {"disk": "ssd"}}})
    current = builders.statefulset(old, NAMES, OWNER, 3)
    current["metadata"]["annotations"]["someone.else/keep"] = "x"
    ops = builders.statefulset_json_patch(builders.statefulset(new, NAMES, OWNER, 3))
    patched = _apply_json_patch(current, ops)
    assert patched["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd"}

    def merge(target: Any, patch: Any) -> Any:  # RFC 7386, what the merge patch did
        if not isinstance(patch, dict):
            return patch
        out = dict(target) if isinstance(target, dict) else {}
        for k, v in patch.items():
            out[k] = merge(out.get(k), v)
        return out

    merged = merge(
        current, builders.statefulset_update_patch(builders.statefulset(new, NAMES, OWNER, 3))
    )
    assert merged["spec"]["template"]["spec"]["nodeSelector"] == {
        "kubernetes.io/hostname": "n",
        "disk": "ssd",
    }
    assert patched["spec"]["replicas"] == 3
    assert patched["spec"]["volumeClaimTemplates"] == current["spec"]["volumeClaimTemplates"]
    assert patched["metadata"]["annotations"]["someone.else/keep"] == "x"
    want = builders.statefulset(new, NAMES, OWNER, 3)["metadata"]["annotations"]
    assert patched["metadata"]["annotations"][builders.SPEC_HASH] == want[builders.SPEC_HASH]
    assert not any(op["path"].startswith("/spec/replicas") for op in ops)


def test_kube_patches_a_statefulset_with_the_json_patch() -> None:
    from metaquorum_operator.actions import Apply
    from metaquorum_operator.kube import JSON_PATCH

    kube = fake_kube([])
    desired = builders.statefulset(QuorumSpec(), NAMES, OWNER, 3)
    kube.execute(Apply("StatefulSet", desired, create=False, reason="r"), NAMES)
    args, kwargs = kube.apps.patch_namespaced_stateful_set.call_args
    assert kwargs["_content_type"] == JSON_PATCH
    assert args[2] == builders.statefulset_json_patch(desired)

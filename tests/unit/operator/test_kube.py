"""kube.py's reading of a pod: the format init container's refusal, from initContainerStatuses
as a kubelet reports it, and its uid, node image and manual-roll annotation; the removal of the
manual-roll annotation as a merge patch (kubernetes client models as the oracle of the shape)."""

from __future__ import annotations

from unittest.mock import MagicMock

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from metaquorum_operator import builders
from metaquorum_operator.kube import Kube, _failing, _refusal
from metaquorum_operator.model import MANUAL_ROLL_ANNOTATION, RECOVER_FROM_ANNOTATION, Names
from metaquorum_operator.placement import unschedulable
from metaquorum_operator.planner import EndManualRoll, EndRecovery


def status(code: int, message: str, *, last: bool = False) -> client.V1PodStatus:
    term = client.V1ContainerStateTerminated(exit_code=code, message=message)
    running = client.V1ContainerState(running=client.V1ContainerStateRunning())
    done = client.V1ContainerState(terminated=term)
    cs = client.V1ContainerStatus(
        name="format",
        image="i",
        image_id="",
        ready=False,
        restart_count=2,
        state=running if last else done,
        last_state=done if last else None,
    )
    return client.V1PodStatus(init_container_statuses=[cs])


def test_a_refusal_is_read_from_the_current_or_the_last_state() -> None:
    line = builders.REFUSED_PREFIX + "the volume holds cluster X, not Y: delete this pod's PVC"
    assert _refusal(status(builders.REFUSED_EXIT, f"some log\n{line}\n")) == (
        "the volume holds cluster X, not Y: delete this pod's PVC"
    )
    assert _refusal(status(builders.REFUSED_EXIT, line, last=True)) is not None


def test_other_failures_and_no_status_are_not_refusals() -> None:
    assert _refusal(status(1, "metaquorum storage format: bad config")) is None
    assert _refusal(status(0, "")) is None
    assert _refusal(client.V1PodStatus()) is None
    assert _refusal(None) is None


def fake_kube(pods: list[client.V1Pod]) -> Kube:
    """Kube over mocks: no owned object exists yet; the pods listed are `pods`."""
    kube = Kube.__new__(Kube)
    missing = ApiException(status=404)
    kube.core, kube.apps, kube.policy, kube.custom = (MagicMock() for _ in range(4))
    kube.core.read_namespaced_config_map.side_effect = missing
    kube.core.read_namespaced_service.side_effect = missing
    kube.policy.read_namespaced_pod_disruption_budget.side_effect = missing
    kube.apps.read_namespaced_stateful_set.side_effect = missing
    kube.core.list_namespaced_pod.return_value = client.V1PodList(items=pods)
    return kube


def pod(name: str, annotations: dict[str, str] | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, uid=f"uid-{name}", annotations=annotations),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="node", image="metaquorum/node:9")]
        ),
    )


def test_observe_reads_each_pods_uid_node_image_and_manual_roll_annotation() -> None:
    kube = fake_kube([pod("q-0"), pod("q-1", {MANUAL_ROLL_ANNOTATION: "true"})])
    observed = kube.observe(Names("q", "ns"))
    assert [(p.uid, p.image, p.manual_roll) for p in observed.pods] == [
        ("uid-q-0", "metaquorum/node:9", False),
        ("uid-q-1", "metaquorum/node:9", True),
    ]


def test_end_manual_roll_removes_the_annotation_with_a_merge_patch() -> None:
    kube = fake_kube([])
    kube.execute(EndManualRoll("done"), Names("q", "ns"))
    args, kwargs = kube.custom.patch_namespaced_custom_object.call_args
    assert args[2:5] == ("ns", "metadataquorums", "q")
    assert args[5] == {"metadata": {"annotations": {MANUAL_ROLL_ANNOTATION: None}}}
    assert kwargs["_content_type"] == "application/merge-patch+json"


def test_end_recovery_removes_the_recover_from_annotation_with_a_merge_patch() -> None:
    kube = fake_kube([])
    kube.execute(EndRecovery("done"), Names("q", "ns"))
    args, kwargs = kube.custom.patch_namespaced_custom_object.call_args
    assert args[5] == {"metadata": {"annotations": {RECOVER_FROM_ANNOTATION: None}}}
    assert kwargs["_content_type"] == "application/merge-patch+json"


def test_a_failing_container_and_an_unschedulable_pod_are_read() -> None:
    def waiting(reason: str) -> client.V1PodStatus:
        state = client.V1ContainerState(waiting=client.V1ContainerStateWaiting(reason=reason))
        cs = client.V1ContainerStatus(
            name="node", image="i", image_id="", ready=False, restart_count=2, state=state
        )
        return client.V1PodStatus(container_statuses=[cs])

    assert _failing(waiting("CrashLoopBackOff")) == "node CrashLoopBackOff"
    assert _failing(waiting("ImagePullBackOff")) == "node ImagePullBackOff"
    assert _failing(waiting("ContainerCreating")) is None  # starting, not failing
    assert _failing(client.V1PodStatus()) is None and _failing(None) is None

    def between_waits(state: client.V1ContainerState, ready: bool = False) -> client.V1PodStatus:
        last = client.V1ContainerState(
            terminated=client.V1ContainerStateTerminated(exit_code=1, reason="Error")
        )
        cs = client.V1ContainerStatus(
            name="node", image="i", image_id="", ready=ready, restart_count=3, state=state,
            last_state=last,
        )  # fmt: skip
        return client.V1PodStatus(container_statuses=[cs])

    # a crash-looping container between two CrashLoopBackOff waits is still failing
    running = client.V1ContainerState(running=client.V1ContainerStateRunning())
    exited = client.V1ContainerState(
        terminated=client.V1ContainerStateTerminated(exit_code=1, reason="Error")
    )
    assert _failing(between_waits(running)) == "node CrashLoopBackOff"
    assert _failing(between_waits(exited)) == "node CrashLoopBackOff"
    assert _failing(between_waits(running, ready=True)) is None  # it came up after all
    unscheduled = client.V1PodCondition(type="PodScheduled", status="False", reason="Unschedulable")
    # kube.observe reads it with placement.unschedulable (the scheduler's message, else a default)
    assert unschedulable([unscheduled]) == "no node satisfies the pod's placement"
    assert unschedulable([client.V1PodCondition(type="PodScheduled", status="True")]) is None


def test_recover_writes_the_request_then_deletes_only_the_named_incarnation() -> None:
    from metaquorum_operator.planner import Apply, Recover
    from metaquorum_operator.recovery import RECOVER_KEY

    kube = fake_kube([])
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "q-config"}}
    cm["data"] = {RECOVER_KEY: "1 uid-1", "bootstrap": "join"}
    kube.execute(Recover("q-1", 1, "uid-1", cm, "r"), Names("q", "ns"))
    args, _ = kube.core.patch_namespaced_config_map.call_args
    assert args[0] == "q-config" and args[2]["data"][RECOVER_KEY] == "1 uid-1"
    args, kwargs = kube.core.delete_namespaced_pod.call_args
    assert args == ("q-1", "ns") and kwargs["body"].preconditions.uid == "uid-1"
    # a later ConfigMap update without the request removes the key (merge patch: null)
    plain = {**cm, "data": {"bootstrap": "join"}}
    kube.execute(Apply("ConfigMap", plain, create=False, reason="r"), Names("q", "ns"))
    args, _ = kube.core.patch_namespaced_config_map.call_args
    assert args[2]["data"] == {RECOVER_KEY: None, "bootstrap": "join"}

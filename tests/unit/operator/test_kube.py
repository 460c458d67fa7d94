"""kube.py's reading of a pod: the format init container's refusal, from initContainerStatuses
as a kubelet reports it (kubernetes client models as the oracle of the shape)."""

from __future__ import annotations

from kubernetes import client
from metaquorum_operator import builders
from metaquorum_operator.kube import _refusal


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

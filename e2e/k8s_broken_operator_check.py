"""The operator's disruption invariant catches a broken operator (issue 33): the operator's
Deployment switched to `metaquorum/operator:e2e-broken-two` (e2e/broken_image.py: the real
operator image plus one layer that makes a roll delete both followers' pods at once; nothing in
the product can turn it on), a manual roll asked for, and pod_watch.majority_down must report
two of the three pods down at once with no nemesis fault. Then the real operator is put back
and the same roll must keep the invariant (the checker tells the two apart).

Not named test_*.py: `make e2e` does not collect it (it changes the session's operator, about 4
minutes); `make e2e-nemesis-k8s` names it on run.sh's command line, which collects it.
"""

from __future__ import annotations

import pytest
from broken_image import OPERATOR_BROKEN_REF, OPERATOR_TWO_AT_ONCE, broken_image, image_archive
from harness import OPERATOR_NS, Cluster, wait_for
from pod_watch import PodWatch, majority_down
from quorums import quorum, settled  # noqa: F401 - the quorum fixture

pytestmark = pytest.mark.e2e
DEPLOYMENT, CONTAINER = "metaquorum", "operator"


def _use_image(cluster: Cluster, image: str) -> None:
    cluster.kubectl(
        "set", "image", f"deployment/{DEPLOYMENT}", f"{CONTAINER}={image}", "-n", OPERATOR_NS
    )
    cluster.kubectl(
        "rollout", "status", f"deployment/{DEPLOYMENT}", "-n", OPERATOR_NS, "--timeout=180s"
    )


@pytest.mark.timeout(900)
def test_an_operator_that_takes_two_voters_down_at_once_is_caught(
    cluster: Cluster,
    quorum: str,  # noqa: F811
) -> None:
    if cluster.containerd is None:
        pytest.skip("needs the real-kubelet target (E2E_CLUSTER=local): images in containerd")
    ns = quorum
    deployment = cluster.apps.read_namespaced_deployment(DEPLOYMENT, OPERATOR_NS)
    (original,) = [c.image for c in deployment.spec.template.spec.containers if c.name == CONTAINER]
    broken = broken_image(
        cluster, image_archive("operator"), OPERATOR_BROKEN_REF, OPERATOR_TWO_AT_ONCE
    )
    pods = PodWatch(cluster, ns).start()
    try:
        _use_image(cluster, broken)
        _roll(cluster, ns)
        violations = wait_for(lambda: majority_down(pods.records, 3), 240, "two pods down at once")
    finally:
        pods.stop()
        _use_image(cluster, original)
    print(f"broken operator (two at once): {violations[:3]}")
    wait_for(lambda: settled(cluster, ns, [0, 1, 2]), 240, "the quorum healed by the real operator")
    # the real operator's roll keeps the invariant
    pods = PodWatch(cluster, ns).start()
    try:
        _roll(cluster, ns)
        wait_for(lambda: _roll_done(cluster, ns), 300, "the real operator's roll done")
    finally:
        records = pods.stop()
    assert majority_down(records, 3) == [], majority_down(records, 3)


def _roll(cluster: Cluster, ns: str) -> None:
    cluster.kubectl(
        "annotate", "metadataquorum", "quorum", "-n", ns, "metaquorum.dev/manual-roll=true"
    )


def _roll_done(cluster: Cluster, ns: str) -> bool:
    obj = cluster.custom.get_namespaced_custom_object(
        "metaquorum.dev", "v1alpha1", ns, "metadataquorums", "quorum"
    )
    annotations = obj["metadata"].get("annotations") or {}
    return "metaquorum.dev/manual-roll" not in annotations and bool(settled(cluster, ns, [0, 1, 2]))

"""The operator invariants catch a broken operator (issue 33): the operator's Deployment switched
to `metaquorum/operator:e2e-broken-two` (e2e/broken_image.py: the real operator image plus one
layer that makes a roll delete both followers' pods at once; nothing in the product can turn it
on), a manual roll of the sample quorum asked for, and quorum_watch.check must report the
leader answering with fewer than a majority of voters caught up while the nemesis took nothing
down. The operator's image is put back afterwards.

Not named test_*.py: `make e2e` does not collect it (it changes the session's operator, about 3
minutes); `make e2e-nemesis-k8s` names it on run.sh's command line, which collects it.
"""

from __future__ import annotations

import pytest
from broken_image import OPERATOR_BROKEN_REF, OPERATOR_TWO_AT_ONCE, broken_image, image_archive
from harness import OPERATOR_NS, Cluster, wait_for
from quorum_watch import Watcher, check
from quorums import hosts, quorum, settled  # noqa: F401 - the quorum fixture

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
    watcher = Watcher(hosts(ns, 3)).start()
    try:
        _use_image(cluster, broken)
        cluster.kubectl(
            "annotate", "metadataquorum", "quorum", "-n", ns, "metaquorum.dev/manual-roll=true"
        )
        violations = wait_for(
            lambda: [v for v in check(watcher.seen) if "voters caught up" in v],
            240,
            "the invariant checker to report the majority taken down",
        )
    finally:
        watcher.stop()
        _use_image(cluster, original)
    print(f"broken operator (two at once): {violations[:3]}")
    assert any(" 1 of 3 voters caught up" in v and "nemesis faults: []" in v for v in violations)
    wait_for(lambda: settled(cluster, ns, [0, 1, 2]), 240, "the quorum healed by the real operator")

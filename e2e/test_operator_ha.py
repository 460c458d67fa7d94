"""Two operator replicas with kopf peering: the active one is deleted in the middle of a scale-up
and the other resumes it (from the MetadataQuorum's status and the live quorum).

The chart is upgraded to `operator.replicas=2` for this test and back to 1 after it. The active
replica is the peer with the highest priority in the ClusterKopfPeering's status (kopf's peer
ids are the pod names: POD_ID).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from harness import OPERATOR_NS, TIMINGS, Cluster, wait_for
from quorums import apply_sample, mq, operator_pods, settled, use_pod_names

pytestmark = pytest.mark.e2e

CHART = str(Path(__file__).resolve().parents[1] / "charts" / "metaquorum")


def peers(cluster: Cluster) -> dict[str, Any]:
    obj = cluster.custom.get_cluster_custom_object(
        "kopf.dev", "v1", "clusterkopfpeerings", "metaquorum"
    )
    return dict(obj.get("status") or {})


def scale_operator(cluster: Cluster, replicas: int) -> None:
    cluster.helm(
        "upgrade",
        "metaquorum",
        CHART,
        "--namespace",
        OPERATOR_NS,
        "--reuse-values",
        "--set",
        f"operator.replicas={replicas}",
    )

    def ready() -> bool:
        dep = cluster.apps.read_namespaced_deployment_status("metaquorum", OPERATOR_NS)
        st = dep.status
        return (
            st.observed_generation == dep.metadata.generation
            and (st.ready_replicas or 0) == replicas
            and (st.updated_replicas or 0) == replicas
            and len(operator_pods(cluster)) == replicas
        )

    wait_for(ready, 120, f"{replicas} operator replicas ready")


def test_the_other_replica_resumes_a_scale_up(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    use_pod_names(cluster)
    ns = namespace
    scale_operator(cluster, 2)
    try:
        wait_for(
            lambda: set(peers(cluster)) >= set(operator_pods(cluster)), 60, "both operators peered"
        )
        apply_sample(cluster, ns)
        wait_for(lambda: settled(cluster, ns, [0, 1, 2]), 240, "3 voters under two operators")
        cluster.kubectl("scale", "metadataquorum", "quorum", "-n", ns, "--replicas=5")

        def mid_scale_up() -> bool:
            sts = cluster.apps.read_namespaced_stateful_set("quorum", ns)
            st = mq(cluster, ns).get("status") or {}
            return sts.spec.replicas > 3 or st.get("pendingOperation") is not None

        wait_for(mid_scale_up, 120, "the scale-up under way")
        live = peers(cluster)
        active = max(
            (p for p in live if p in operator_pods(cluster)), key=lambda p: live[p]["priority"]
        )
        t0 = time.monotonic()
        cluster.kubectl("delete", "pod", active, "-n", OPERATOR_NS, "--wait=false")
        wait_for(lambda: settled(cluster, ns, [0, 1, 2, 3, 4]), 300, "5 voters after failover")
        TIMINGS["operator failover mid scale-up -> 5 voters (s)"] = time.monotonic() - t0
        assert active not in peers(cluster)
    finally:
        scale_operator(cluster, 1)
        cluster.kubectl("delete", "metadataquorum", "quorum", "-n", ns, "--wait=false")

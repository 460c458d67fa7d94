"""What the operator's e2e tests share: the sample MetadataQuorum, reading it, waiting for it to
settle, the `quorum` and `watched` fixtures, and the live quorum seen from the test
(DescribeQuorum, the ledger, kill -9 and heal).

Role: the library of test_operator_real_node, test_operator_faults, test_operator_ha,
test_operator_nemesis, test_operator_upgrades, test_operator_adoption and test_tls_operator (a
test module imports this, never another test module). `quorum` and `watched` are pytest
fixtures: a test module that uses them imports both from here.

Invariants: the oracles are the live quorum (DescribeQuorum through metaquorum.admin, from the
test process through the pods' stable names: use_pod_names) and the MetadataQuorum's status;
`settled` holds only when the two agree. Nothing here changes the cluster except
apply_sample, the `quorum` fixture (which applies the sample; `watched` adds the ledger and
a Watcher to it) and kill_and_heal.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import OPERATOR_NS, TIMINGS, Cluster, wait_for
from quorum_watch import Seen, Watcher

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GROUP, VERSION, PLURAL = "metaquorum.dev", "v1alpha1", "metadataquorums"
SAMPLE = HERE / "samples" / "metadataquorum.yaml"


def use_pod_names(cluster: Cluster) -> None:
    """Resolve pods' stable names in this process (cluster.hosts_file: the stand-in's, or the
    real-kubelet target's kept from the API; see harness.Cluster)."""
    if cluster.hosts_file is None:
        pytest.skip("the pods' names and addresses are not reachable from here (kind)")
    if "standin_names" in sys.modules:
        return
    os.environ["METAQUORUM_E2E_HOSTS"] = str(cluster.hosts_file)
    spec = importlib.util.spec_from_file_location(
        "standin_names", HERE / "standin_site" / "sitecustomize.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["standin_names"] = module
    spec.loader.exec_module(module)


def mq(cluster: Cluster, ns: str) -> dict[str, Any]:
    return dict(cluster.custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "quorum"))


def cond(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return dict(c)
    return {}


def describe(ns: str, members: int) -> Any:
    """DescribeQuorum from the test, as `metaquorum quorum describe --status` does."""
    from metaquorum.admin.client import AdminClient
    from metaquorum.net.endpoint import Endpoint

    async def go() -> Any:
        eps = [
            Endpoint(f"quorum-{i}.quorum-headless.{ns}.svc.cluster.local", 9093)
            for i in range(members)
        ]
        admin = AdminClient(eps, timeout_s=5)
        try:
            return await admin.describe_quorum()
        finally:
            await admin.close()

    return asyncio.run(go())


def settled(cluster: Cluster, ns: str, voters: list[int]) -> dict[str, Any] | None:
    """The resource once Running with exactly `voters`, agreeing with DescribeQuorum."""
    obj = mq(cluster, ns)
    st = obj.get("status") or {}
    want = ",".join(map(str, voters))
    if st.get("phase") != "Running" or st.get("voterIds") != want:
        return None
    if st.get("observedGeneration") != obj["metadata"]["generation"]:
        return None
    info = describe(ns, max(voters) + 1)
    live = sorted((v.replica_id, str(v.directory_id)) for v in info.voters)
    reported = sorted((v["id"], v.get("directoryId")) for v in st["voters"])
    return obj if live == reported and info.leader_id == st["leader"] else None


# What every e2e quorum sets besides the sample: a readiness probe every second
# (spec.readinessProbe) instead of the default 5 s. The operator waits for a pod's readiness
# before each voter change and roll step; at 5 s much of a 3-voter apply was the probe's period.
E2E_SPEC: dict[str, Any] = {
    "image": "metaquorum/node:e2e",
    "imagePullPolicy": "Never",
    "readinessProbe": {"periodSeconds": 1},
}


def apply_sample(cluster: Cluster, ns: str, **spec: Any) -> None:
    """The sample on image metaquorum/node:e2e, with `spec` merged into its spec."""
    body = yaml.safe_load(SAMPLE.read_text())
    body["metadata"]["namespace"] = ns
    body["spec"].update({**E2E_SPEC, **spec})
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


@pytest.fixture
def quorum(cluster: Cluster, operator: str, namespace: str) -> str:
    use_pod_names(cluster)
    t0 = time.monotonic()
    apply_sample(cluster, namespace)
    wait_for(lambda: settled(cluster, namespace, [0, 1, 2]), 240, "3 voters, Running")
    TIMINGS["apply -> 3 voters Running (s)"] = time.monotonic() - t0
    return namespace


@pytest.fixture
def watched(quorum: str) -> Iterator[tuple[str, Any, Watcher]]:
    """The `quorum` fixture's quorum with the ledger appending (20 acknowledged first) and a
    Watcher on its DescribeQuorum; both stopped at the end (a test may stop them earlier)."""
    ledger = ledger_for(quorum).start()
    watcher = Watcher(hosts(quorum)).start()
    try:
        ledger.wait_acked(20, timeout_s=60)
        yield quorum, ledger, watcher
    finally:
        watcher.stop()
        ledger.stop()


def hosts(ns: str, members: int = 5) -> list[tuple[str, int]]:
    return [(f"quorum-{i}.quorum-headless.{ns}.svc.cluster.local", 9093) for i in range(members)]


def ledger_for(ns: str) -> Any:
    from metaquorum.net.endpoint import Endpoint

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.integration.ledger import Ledger

    return Ledger(lambda: [Endpoint(h, p) for h, p in hosts(ns, 3)])


def whole(watcher: Watcher, voters: int) -> Seen | None:
    """The latest answer if it shows a leader and `voters` voters, all caught up."""
    s = watcher.latest()
    if s is None or s.leader < 0 or len(s.voters) != voters or s.up != s.voters:
        return None
    return s


def kill_and_heal(
    cluster: Cluster, ns: str, watcher: Watcher, before: Seen, victim: int
) -> tuple[float, Seen]:
    """kill -9 pod `victim`'s node process; returns (kill time, the first answer showing the
    quorum healed): a leader (in a newer epoch if the victim led), the same voters, every one
    caught up since the kill and the victim since its restartCount was seen to go up (so the
    heal time may be over by the 0.25 s poll)."""
    pod = f"quorum-{victim}"
    restarts = cluster.restarts(ns, pod, "node")
    t0, wall0 = time.monotonic(), time.time() * 1000
    assert cluster.kill_container(ns, pod, "node") > 0
    restarted: list[float] = []

    def healed() -> Seen | None:
        if not restarted:
            if cluster.restarts(ns, pod, "node") <= restarts:
                return None
            restarted.append(time.time() * 1000)
        s = whole(watcher, len(before.voters))
        if s is None or s.t <= t0 or s.voters != before.voters:
            return None
        if victim == before.leader and s.epoch <= before.epoch:
            return None
        key = next(k for k in s.voters if k[0] == victim)
        if not s.caught_up_since(key, restarted[0]):
            return None
        return s if all(s.caught_up_since(k, wall0) for k in s.voters) else None

    return t0, wait_for(healed, 180, f"the quorum healed after kill -9 of {pod}")


def operator_pods(cluster: Cluster) -> list[str]:
    pods = cluster.core.list_namespaced_pod(
        OPERATOR_NS, label_selector="app.kubernetes.io/name=metaquorum-operator"
    ).items
    return [p.metadata.name for p in pods if p.metadata.deletion_timestamp is None]

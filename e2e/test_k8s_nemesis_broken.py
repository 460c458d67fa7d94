"""The Kubernetes nemesis catches a broken build (issue 33): an operator-run quorum of a node
that acknowledges before a majority (e2e/broken_image.py: the real node image plus one layer
that makes the leader's high watermark its own flushed offset; the product has no way to turn
this on), the nemesis's `isolate(leader)` held 8 s while the in-cluster client appends and
reads. The isolated leader keeps acknowledging appends no follower has; the new leader's log
holds other values at those offsets; porcupine must call the history Illegal. Real-kubelet
target only; about 2 minutes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from broken_image import NODE_ACK_BEFORE_MAJORITY, NODE_BROKEN_REF, broken_image, image_archive
from harness import Cluster, wait_for
from k8s_nemesis import Fault
from k8s_nemesis_run import K8sNemesis, porcupine, start_client
from quorum_watch import Watcher
from quorums import SAMPLE, hosts, settled, use_pod_names, whole

pytestmark = [pytest.mark.e2e, pytest.mark.e2e_long]  # make e2e-long


@pytest.mark.timeout(600)
def test_k8s_nemesis_catches_a_node_that_acknowledges_before_a_majority(
    cluster: Cluster, operator: str, namespace: str, tmp_path: Path
) -> None:
    if cluster.containerd is None:
        pytest.skip("the Kubernetes nemesis needs the real-kubelet target (E2E_CLUSTER=local)")
    use_pod_names(cluster)
    ns = namespace
    image = broken_image(cluster, image_archive("node"), NODE_BROKEN_REF, NODE_ACK_BEFORE_MAJORITY)
    body = yaml.safe_load(SAMPLE.read_text())
    body["metadata"]["namespace"] = ns
    body["spec"].update({"image": image, "imagePullPolicy": "Never"})
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    wait_for(lambda: settled(cluster, ns, [0, 1, 2]), 240, "3 voters of the broken build")
    watcher = Watcher(hosts(ns, 3)).start()
    nemesis = K8sNemesis(cluster, ns, watcher)
    client = start_client(cluster, ns, 35, 7, tmp_path)
    try:
        time.sleep(5)
        before = wait_for(lambda: whole(watcher, 3), 60, "3 voters, all caught up")
        leader = before.leader
        others = [o for o in range(3) if o != leader]
        start_ns = time.time_ns()
        for o in others:
            nemesis.faults.drop(leader, o)
        time.sleep(8)
        nemesis.faults.heal_net()
        nemesis.faults.record(f"{Fault('isolate', 'leader', 0, 8)} on quorum-{leader}", start_ns)
        client.communicate(timeout=120)
    finally:
        nemesis.faults.heal_all()
        if client.poll() is None:
            client.kill()
            client.wait(10)
        watcher.stop()
    verdict = porcupine(tmp_path, nemesis.faults.log)
    print(f"broken build (ack-before-majority): porcupine {verdict}")
    assert verdict.get("result") == "Illegal", verdict

"""The operator runs a KIP-853 dynamic quorum of the real node on the real control plane.

The chart's operator, the sample MetadataQuorum, pods run by the node agent (the kubelet stand-in
or a real kubelet running the node image): the format
init container (pod 0 --standalone, the others --no-initial-controllers), then `metaquorum
server start`. Shown here, with the live quorum as the oracle (DescribeQuorum through
metaquorum.admin from the test, and each node's own /status):
- a 3-replica quorum forms with 3 voters, each with its own directory id;
- scale 3 -> 5 -> 3 while a client appends; Kafka 4.3.1's `MetadataQuorumCommand describe
  --status` agrees with the status at each step; the ledger (tests/integration/ledger.py) finds
  no acknowledged record lost; the removed members' PVCs go;
- a voter's PVC and pod deleted -> it comes back with a new directory id, the old one removed
  from the voters and tombstoned;
- the leader's pod deleted -> a new leader, the quorum whole again.
Times of each step go to the e2e timings summary.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import diagnostics
import pytest
from harness import TIMINGS, Cluster, wait_for
from kafka_tool import kafka_status
from quorums import cond, mq, quorum, settled  # noqa: F401 - the quorum fixture

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent


def columns(cluster: Cluster, ns: str) -> dict[str, str]:
    lines = cluster.kubectl("get", "metadataquorum", "quorum", "-n", ns).stdout.splitlines()
    header, row = lines[0].split(), lines[1].split()
    return dict(zip(header, row, strict=False)) if len(row) == len(header) else {}


def test_a_new_quorum_forms_with_three_voters_and_their_directory_ids(
    cluster: Cluster,
    quorum: str,  # noqa: F811
) -> None:
    ns = quorum
    obj = mq(cluster, ns)
    st = obj["status"]
    dirs = [v["directoryId"] for v in st["voters"]]
    assert len(set(dirs)) == 3 and all(len(d) == 22 for d in dirs)
    assert st["clusterId"] == obj["spec"]["clusterId"]
    nodes = [cluster.pod_http(ns, f"quorum-{i}", 8080, "/status") for i in range(3)]
    assert {n["cluster_id"] for n in nodes} == {st["clusterId"]}
    assert {(n["leader_id"], n["epoch"]) for n in nodes} == {(st["leader"], st["epoch"])}
    assert all(sorted(n["voters"]) == [0, 1, 2] for n in nodes)
    assert cond(obj, "Available")["status"] == "True"
    assert cond(obj, "Degraded")["status"] == "False"
    assert cond(obj, "Progressing")["status"] == "False"
    cols = columns(cluster, ns)
    assert (cols["REPLICAS"], cols["VOTERS"], cols["LEADER"], cols["PHASE"]) == (
        "3",
        "0,1,2",
        str(st["leader"]),
        "Running",
    )
    assert cols["READY"].endswith("/3") and cols["OPERATION"] == "Idle"
    events = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum"
    ).items
    added = sorted(e.message for e in events if e.reason == "VoterAdded")
    assert [m.split()[2] for m in added] == ["1", "2"]  # "added voter N ..."
    # pod 0 bootstrapped alone; from then on the ConfigMap says join
    cm = cluster.core.read_namespaced_config_map("quorum-config", ns)
    assert cm.data["bootstrap"] == "join"
    # what a failed test's report would carry about this quorum (conftest's makereport hook)
    text = diagnostics.collect(cluster, ns)
    assert "(unavailable:" not in text, text
    assert "status {" in text and '"voterIds": "0,1,2"' in text, text
    assert "Available=True QuorumAvailable" in text and "Progressing=False" in text, text
    assert all(f"quorum-{i}" in text and f"[quorum-{i}/node]" in text for i in range(3)), text
    assert "VoterAdded" in text and "(every pod ready)" in text, text


def test_scale_3_to_5_to_3_while_a_client_appends(cluster: Cluster, quorum: str) -> None:  # noqa: F811
    from metaquorum.net.endpoint import Endpoint

    sys.path.insert(0, str(HERE.parent))
    from tests.integration.ledger import Ledger

    ns = quorum
    ledger = Ledger(
        lambda: [
            Endpoint(f"quorum-{i}.quorum-headless.{ns}.svc.cluster.local", 9093) for i in range(3)
        ]
    ).start()
    try:
        ledger.wait_acked(20, timeout_s=60)
        for target, voters in ((5, [0, 1, 2, 3, 4]), (3, [0, 1, 2])):
            t0 = time.monotonic()
            cluster.kubectl("scale", "metadataquorum", "quorum", "-n", ns, f"--replicas={target}")
            obj = wait_for(lambda v=voters: settled(cluster, ns, v), 300, f"voters {voters}")
            TIMINGS[f"scale to {target} (s)"] = time.monotonic() - t0
            # Kafka's own tool agrees with the status (a leader change between the two reads
            # would show as a higher epoch: then read the status again)
            kafka = kafka_status(cluster, ns, target)
            st = obj["status"]
            if kafka["epoch"] != st["epoch"]:
                st = mq(cluster, ns)["status"]
            assert kafka["voters"] == {v["id"]: v["directoryId"] for v in st["voters"]}
            assert (kafka["leader"], kafka["epoch"]) == (st["leader"], st["epoch"])
            ledger.wait_acked(20, timeout_s=60)
        sts = cluster.apps.read_namespaced_stateful_set("quorum", ns)
        assert sts.spec.replicas == 3
        claims = {
            c.metadata.name for c in cluster.core.list_namespaced_persistent_volume_claim(ns).items
        }
        wait_for(
            lambda: (
                not (
                    {"data-quorum-3", "data-quorum-4"}
                    & {
                        c.metadata.name
                        for c in cluster.core.list_namespaced_persistent_volume_claim(ns).items
                    }
                )
            ),
            60,
            "the removed members' PVCs deleted (whenScaled: Delete)",
        )
        assert "data-quorum-0" in claims
    finally:
        ledger.stop()
    result = ledger.check()
    print(f"ledger: {result}")
    assert result.acked >= 60
    events = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum"
    ).items
    removed = [e.message.split()[2] for e in events if e.reason == "VoterRemoved"]
    assert sorted(removed) == ["3", "4"]


def test_a_voter_whose_pvc_and_pod_are_deleted_comes_back_with_a_new_directory(
    cluster: Cluster,
    quorum: str,  # noqa: F811
) -> None:
    ns = quorum
    st = mq(cluster, ns)["status"]
    victim = next(v for v in st["voters"] if v["id"] != st["leader"])
    i, old = victim["id"], victim["directoryId"]
    t0 = time.monotonic()
    cluster.kubectl("delete", "pvc", f"data-quorum-{i}", "-n", ns, "--wait=false")
    cluster.kubectl("delete", "pod", f"quorum-{i}", "-n", ns)

    def replaced() -> dict[str, Any] | None:
        obj = settled(cluster, ns, [0, 1, 2])
        if obj is None:
            return None
        new = next(v for v in obj["status"]["voters"] if v["id"] == i)
        return obj if new["directoryId"] != old else None

    obj = wait_for(replaced, 300, f"voter {i} back with a new directory id")
    TIMINGS["disk replacement: PVC+pod deleted -> new voter (s)"] = time.monotonic() - t0
    cm = cluster.core.read_namespaced_config_map("quorum-config", ns)
    assert old in cm.data["removed-directory-ids"].split()
    assert old not in [v["directoryId"] for v in obj["status"]["voters"]]


def test_the_leaders_pod_deleted_heals_with_a_new_leader(cluster: Cluster, quorum: str) -> None:  # noqa: F811
    ns = quorum
    st = mq(cluster, ns)["status"]
    old_leader, old_epoch = st["leader"], st["epoch"]
    t0 = time.monotonic()
    cluster.kubectl("delete", "pod", f"quorum-{old_leader}", "-n", ns, "--wait=false")

    def healed() -> dict[str, Any] | None:
        obj = settled(cluster, ns, [0, 1, 2])
        return obj if obj and obj["status"]["epoch"] > old_epoch else None

    obj = wait_for(healed, 180, "a new epoch with 3 voters again")
    TIMINGS["leader pod deleted -> healed (s)"] = time.monotonic() - t0
    print(f"leader {old_leader}@{old_epoch} -> {obj['status']['leader']}@{obj['status']['epoch']}")

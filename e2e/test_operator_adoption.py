"""An adopted static quorum migrated to dynamic, and a duplicate incarnation named, on the real
node under the operator (issue 29), while the integration tier's ledger appends throughout.

- static -> dynamic: three PVCs (the names the StatefulSet's claim template gives) formatted
  before any MetadataQuorum exists by pods running `metaquorum storage format` with
  `controller.quorum.voters` in their config (Kafka's static quorum: meta.properties only, no
  bootstrap checkpoint, kraft.version 0), as an older chart's static quorum left them. A
  MetadataQuorum with that cluster id and `spec.staticVoters` adopts them: the pods start on
  those volumes (their directory ids kept), the operator sends UpdateFeatures kraft.version=1
  (Event KraftVersionUpgraded, status.kraftVersion 1, DescribeQuorum's voters now with their
  directory ids), then the quorum is scaled 3 -> 5 -> 3 as a dynamic one; no acknowledged
  append lost.
- a duplicate incarnation: a stray pod runs node id 2 of the quorum on a fresh volume (another
  directory id, as a PVC restored from an old copy next to the running one) and fetches from
  the leader as an observer (2, B) while voter (2, A) runs caught up: status.membershipProblems
  names DuplicateIncarnation with both directory ids, a Warning Event; the operator does not
  act (no tombstone, no voter change, no pod restarted) while both run; no acknowledged append
  lost.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from harness import TIMINGS, Cluster, wait_for
from quorums import (  # noqa: F401 - the quorum fixture
    apply_sample,
    describe,
    ledger_for,
    mq,
    quorum,
    settled,
    use_pod_names,
)

pytestmark = [pytest.mark.e2e, pytest.mark.e2e_long]  # make e2e-long

IMAGE = "metaquorum/node:e2e"
DATA = "/var/lib/metaquorum"


def new_cluster_id() -> str:
    from metaquorum.protocol.types import Uuid

    while True:  # the CRD's pattern: not starting with '-'
        cid = str(Uuid.random())
        if not cid.startswith("-"):
            return cid


def format_static(cluster: Cluster, ns: str, cid: str, voters: str) -> dict[int, str]:
    """PVCs data-quorum-0..2, each formatted by a pod with controller.quorum.voters (a static
    quorum's volumes); node id -> the directory id its meta.properties holds."""
    script = (
        'printf "%s\\n" "node.id=$NODE" process.roles=controller'
        " controller.listener.names=CONTROLLER listeners=CONTROLLER://:9093"
        f' "controller.quorum.voters=$VOTERS" metadata.log.dir={DATA}/data > /tmp/s.properties'
        ' && exec metaquorum storage format --config /tmp/s.properties --cluster-id "$CID"'
    )
    for i in range(3):
        cluster.core.create_namespaced_persistent_volume_claim(
            ns,
            {
                "metadata": {"name": f"data-quorum-{i}"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        env = {"NODE": str(i), "VOTERS": voters, "CID": cid}
        cluster.core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": f"format-{i}"},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000},
                    "containers": [
                        {
                            "name": "format",
                            "image": IMAGE,
                            "imagePullPolicy": "Never",
                            "command": ["sh", "-c", script],
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                            "volumeMounts": [{"name": "data", "mountPath": DATA}],
                        }
                    ],
                    "volumes": [
                        {"name": "data", "persistentVolumeClaim": {"claimName": f"data-quorum-{i}"}}
                    ],
                },
            },
        )

    def done() -> bool:
        phases = [
            cluster.core.read_namespaced_pod(f"format-{i}", ns).status.phase for i in range(3)
        ]
        assert "Failed" not in phases, [
            cluster.core.read_namespaced_pod_log(f"format-{i}", ns) for i in range(3)
        ]
        return phases == ["Succeeded"] * 3

    wait_for(done, 120, "3 volumes formatted with controller.quorum.voters")
    dirs = {}
    for i in range(3):
        said = cluster.core.read_namespaced_pod_log(f"format-{i}", ns)
        print(f"format-{i}:", said.strip().splitlines()[-1:])
        cluster.core.delete_namespaced_pod(f"format-{i}", ns, grace_period_seconds=0)
        data = cluster.pv_path(ns, f"data-quorum-{i}") / "data"
        meta = dict(
            line.split("=", 1)
            for line in (data / "meta.properties").read_text().splitlines()
            if "=" in line and not line.startswith("#")
        )
        assert meta["cluster.id"] == cid and meta["node.id"] == str(i), meta
        # Kafka's static format: no bootstrap checkpoint (no VotersRecord): kraft.version 0
        assert not list(data.rglob("*.checkpoint")), list(data.rglob("*"))
        dirs[i] = meta["directory.id"]
    return dirs


class KraftVersions:
    """status.kraftVersion as it changes, every 0.2 s."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        self.seen: list[Any] = []
        self._stop = threading.Event()

        def run() -> None:
            while not self._stop.is_set():
                v = (mq(cluster, ns).get("status") or {}).get("kraftVersion")
                if not self.seen or self.seen[-1] != v:
                    self.seen.append(v)
                time.sleep(0.2)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self) -> list[Any]:
        self._stop.set()
        self._thread.join(10)
        return self.seen


def scale(cluster: Cluster, ns: str, replicas: int) -> None:
    cluster.kubectl(
        "patch", "metadataquorum", "quorum", "-n", ns, "--type=merge",
        "-p", json.dumps({"spec": {"replicas": replicas}}),
    )  # fmt: skip


def test_an_adopted_static_quorum_is_migrated_to_dynamic_then_scaled_3_5_3(
    cluster: Cluster, operator: str, namespace: str
) -> None:
    ns = namespace
    use_pod_names(cluster)
    cid = new_cluster_id()
    voters = ",".join(
        f"{i}@quorum-{i}.quorum-headless.{ns}.svc.cluster.local:9093" for i in range(3)
    )
    t0 = time.monotonic()
    dirs = format_static(cluster, ns, cid, voters)
    TIMINGS["3 static volumes formatted (s)"] = time.monotonic() - t0
    ledger = ledger_for(ns).start()  # appends (or fails, unknown) from the first leader on
    try:
        t0 = time.monotonic()
        apply_sample(cluster, ns, clusterId=cid, staticVoters=voters)
        kraft = KraftVersions(cluster, ns)
        wait_for(
            lambda: (
                (mq(cluster, ns).get("status") or {}).get("kraftVersion") == 1
                and settled(cluster, ns, [0, 1, 2])
            ),
            240,
            "kraft.version 1, 3 voters Running",
        )
        TIMINGS["adopted static quorum -> kraft.version 1, 3 voters (s)"] = time.monotonic() - t0
        ledger.wait_acked(20, timeout_s=60)
        print("status.kraftVersion seen:", kraft.stop())
        events = cluster.core.list_namespaced_event(
            ns, field_selector="involvedObject.kind=MetadataQuorum,reason=KraftVersionUpgraded"
        ).items
        assert events, "no KraftVersionUpgraded Event"
        print("event:", events[0].message)
        # the adopted volumes, not new ones: DescribeQuorum's voters have the directory ids the
        # static format wrote, now in the VotersRecord
        info = describe(ns, 3)
        assert {v.replica_id: str(v.directory_id) for v in info.voters} == dirs
        # then a dynamic quorum: 3 -> 5 -> 3
        t0 = time.monotonic()
        scale(cluster, ns, 5)
        wait_for(lambda: settled(cluster, ns, [0, 1, 2, 3, 4]), 300, "5 voters Running")
        TIMINGS["static-born quorum 3 -> 5 voters (s)"] = time.monotonic() - t0
        ledger.wait_acked(20, timeout_s=60)
        t0 = time.monotonic()
        scale(cluster, ns, 3)
        wait_for(lambda: settled(cluster, ns, [0, 1, 2]), 300, "3 voters Running again")
        TIMINGS["static-born quorum 5 -> 3 voters (s)"] = time.monotonic() - t0
        ledger.wait_acked(20, timeout_s=60)
        assert {v.replica_id: str(v.directory_id) for v in describe(ns, 3).voters} == dirs
        assert mq(cluster, ns)["status"]["kraftVersion"] == 1
    finally:
        ledger.stop()
    result = ledger.check()
    print(f"ledger: {result}")
    assert result.acked >= 60


def stray_of(cluster: Cluster, ns: str, node: int) -> dict[str, Any]:
    """A pod running node id `node` of the quorum on a fresh emptyDir (another directory id):
    the StatefulSet's own pod template, without its labels (no Service, PDB or StatefulSet
    counts it) and with the node id given."""
    sts = cluster.apps.read_namespaced_stateful_set("quorum", ns)
    spec = cluster.api.sanitize_for_serialization(sts.spec.template.spec)
    for key in ("affinity", "topologySpreadConstraints"):
        spec.pop(key, None)
    spec["volumes"].append({"name": "data", "emptyDir": {}})
    for c in spec.get("initContainers", []) + spec["containers"]:
        c["env"] = [
            {"name": "METAQUORUM_NODE_ID", "value": str(node)}
            if e["name"] == "METAQUORUM_NODE_ID"
            else e
            for e in c["env"]
        ]
        c.pop("readinessProbe", None)
        c.pop("livenessProbe", None)
    return {"metadata": {"name": f"stray-{node}", "labels": {"app": "stray"}}, "spec": spec}


def test_a_second_incarnation_of_a_voter_is_named_and_not_acted_on(
    cluster: Cluster,
    quorum: str,  # noqa: F811 - the fixture
) -> None:
    ns, victim = quorum, 2
    ledger = ledger_for(ns).start()
    try:
        ledger.wait_acked(20, timeout_s=60)
        before = mq(cluster, ns)
        voters = {v["id"]: v["directoryId"] for v in before["status"]["voters"]}
        uids = cluster.pod_uids(ns, 3)
        t0 = time.monotonic()
        cluster.core.create_namespaced_pod(ns, stray_of(cluster, ns, victim))

        def stray_dir() -> str | None:
            info = describe(ns, 3)
            return next(
                (
                    str(o.directory_id)
                    for o in info.observers
                    if o.replica_id == victim and str(o.directory_id) != voters[victim]
                ),
                None,
            )

        other = wait_for(stray_dir, 120, f"a second incarnation of node {victim} fetching")

        def named() -> dict[str, Any] | None:
            found = mq(cluster, ns)["status"].get("membershipProblems") or []
            return next(
                (p for p in found if p["kind"] == "DuplicateIncarnation" and p["id"] == victim),
                None,
            )

        problem = wait_for(named, 60, f"DuplicateIncarnation {victim} in membershipProblems")
        TIMINGS["stray incarnation started -> named (s)"] = time.monotonic() - t0
        print("problem:", problem)
        assert voters[victim] in problem["message"] and other in problem["message"]
        events = cluster.core.list_namespaced_event(
            ns, field_selector="involvedObject.kind=MetadataQuorum,reason=DuplicateIncarnation"
        ).items
        assert events and f"node {victim}" in events[0].message, events
        # not acted on: a few reconciles (1 s apart) with both incarnations running
        for _ in range(10):
            st = mq(cluster, ns)["status"]
            assert {v["id"]: v["directoryId"] for v in st["voters"]} == voters
            assert cluster.pod_uids(ns, 3) == uids
            time.sleep(1)
        cm = cluster.core.read_namespaced_config_map("quorum-config", ns)
        assert not (cm.data or {}).get("removed-directory-ids", "").strip(), cm.data
        assert stray_dir() == other  # still running, still an observer
    finally:
        cluster.core.delete_namespaced_pod(f"stray-{victim}", ns, grace_period_seconds=0)
        ledger.stop()
    result = ledger.check()
    print(f"ledger: {result}")
    assert result.acked >= 20

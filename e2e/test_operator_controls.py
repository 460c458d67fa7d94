"""The operator's everyday controls on the real node: pause reconciliation and manual roll.

- pause: annotation metaquorum.dev/pause-reconciliation=true, then `kubectl scale` to 4: for
  several reconcile intervals nothing happens (the StatefulSet stays at 3 replicas, the voters
  0,1,2), the ReconciliationPaused condition is True naming what waits, phase Paused, an Event
  ReconciliationPaused; the annotation removed, the scale proceeds to 4 voters, the condition
  turns False and an Event ReconciliationResumed is posted.
- manual roll: annotation metaquorum.dev/manual-roll=true on the MetadataQuorum restarts every
  pod once (a watcher records each pod's deletionTimestamp), followers first and the pod that
  led last, after a LeaderResigning Event; one ManualRoll Event per pod; the annotation removed
  by the operator (ManualRollDone) and no pod restarted again after that; voters keep their
  directory ids. Then the annotation on one follower pod restarts that pod only.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from harness import TIMINGS, Cluster, wait_for
from quorums import cond, mq, quorum, settled  # noqa: F401 - the quorum fixture

pytestmark = pytest.mark.e2e

PAUSE = "metaquorum.dev/pause-reconciliation"
ROLL = "metaquorum.dev/manual-roll"


def events(cluster: Cluster, ns: str, reason: str) -> list[Any]:
    found = cluster.core.list_namespaced_event(
        ns, field_selector=f"involvedObject.kind=MetadataQuorum,reason={reason}"
    ).items
    return sorted(found, key=lambda e: e.first_timestamp or e.event_time)


class Deletions:
    """Each pod incarnation's deletionTimestamp as first seen (polled every 0.1 s)."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        self.cluster, self.ns = cluster, ns
        self.deleted: dict[str, tuple[str, float]] = {}  # uid -> (pod name, monotonic time)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for p in self.cluster.core.list_namespaced_pod(self.ns).items:
                m = p.metadata
                if m.deletion_timestamp and m.uid not in self.deleted:
                    self.deleted[m.uid] = (m.name, time.monotonic())
            time.sleep(0.1)

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(10)
        return [name for name, _ in sorted(self.deleted.values(), key=lambda x: x[1])]


def test_pause_holds_a_scale_and_resume_lets_it_proceed(
    cluster: Cluster,
    quorum: str,  # noqa: F811
) -> None:
    ns = quorum
    cluster.kubectl("annotate", "metadataquorum", "quorum", "-n", ns, f"{PAUSE}=true")
    wait_for(
        lambda: cond(mq(cluster, ns), "ReconciliationPaused").get("status") == "True",
        30,
        "ReconciliationPaused True",
    )
    assert mq(cluster, ns)["status"]["phase"] == "Paused"
    cluster.kubectl("scale", "metadataquorum", "quorum", "-n", ns, "--replicas=4")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 8:  # 8 reconcile intervals of the e2e chart (1 s)
        sts = cluster.apps.read_namespaced_stateful_set("quorum", ns)
        assert sts.spec.replicas == 3, "the StatefulSet was scaled while paused"
        assert mq(cluster, ns)["status"].get("voterIds") == "0,1,2"
        time.sleep(0.5)
    paused = cond(mq(cluster, ns), "ReconciliationPaused")
    assert paused["reason"] == "PausedByAnnotation" and "on resume:" in paused["message"]
    assert [e.message for e in events(cluster, ns, "ReconciliationPaused")]
    assert cond(mq(cluster, ns), "Available")["status"] == "True"  # observation went on
    t1 = time.monotonic()
    cluster.kubectl("annotate", "metadataquorum", "quorum", "-n", ns, f"{PAUSE}-")
    wait_for(lambda: settled(cluster, ns, [0, 1, 2, 3]), 120, "4 voters after the resume")
    TIMINGS["resume -> scale 3 -> 4 done (s)"] = time.monotonic() - t1
    resumed = cond(mq(cluster, ns), "ReconciliationPaused")
    assert (resumed["status"], resumed["reason"]) == ("False", "Reconciling")
    assert events(cluster, ns, "ReconciliationResumed")


def test_manual_roll_restarts_every_pod_once_leader_last_then_one_pod(
    cluster: Cluster,
    quorum: str,  # noqa: F811
) -> None:
    ns = quorum
    before = mq(cluster, ns)["status"]
    leader = before["leader"]
    dirs = {v["id"]: v["directoryId"] for v in before["voters"]}
    uids = cluster.pod_uids(ns, 3)
    deletions = Deletions(cluster, ns)
    t0 = time.monotonic()
    cluster.kubectl("annotate", "metadataquorum", "quorum", "-n", ns, f"{ROLL}=true")

    def rolled() -> bool:
        now = cluster.pod_uids(ns, 3)
        done = ROLL not in (mq(cluster, ns)["metadata"].get("annotations") or {})
        changed = all(now[i] != uids[i] for i in range(3))
        return done and changed and bool(settled(cluster, ns, [0, 1, 2]))

    wait_for(rolled, 120, "every pod restarted and the annotation removed")
    TIMINGS["manual roll of 3 pods (s)"] = time.monotonic() - t0
    after = cluster.pod_uids(ns, 3)
    time.sleep(4)  # a few reconciles more: no second roll
    assert cluster.pod_uids(ns, 3) == after
    order = deletions.stop()
    print("manual roll order:", order, "leader", leader)
    assert sorted(order) == ["quorum-0", "quorum-1", "quorum-2"], order  # each once
    assert order[-1] == f"quorum-{leader}", f"the leader was not restarted last: {order}"
    rolls = [e.message.split()[2] for e in events(cluster, ns, "ManualRoll")]
    assert sorted(rolls) == ["quorum-0", "quorum-1", "quorum-2"], rolls
    assert [e.message.split()[2] for e in events(cluster, ns, "LeaderResigning")] == [str(leader)]
    assert len(events(cluster, ns, "ManualRollDone")) == 1
    assert {v["id"]: v["directoryId"] for v in mq(cluster, ns)["status"]["voters"]} == dirs
    # one pod: a follower annotated restarts alone
    follower = next(i for i in range(3) if i != mq(cluster, ns)["status"]["leader"])
    cluster.kubectl("annotate", "pod", f"quorum-{follower}", "-n", ns, f"{ROLL}=true")
    wait_for(
        lambda: (
            cluster.pod_uids(ns, 3)[follower] != after[follower] and settled(cluster, ns, [0, 1, 2])
        ),
        60,
        f"quorum-{follower} restarted",
    )
    now = cluster.pod_uids(ns, 3)
    assert [i for i in range(3) if now[i] != after[i]] == [follower]
    assert len(events(cluster, ns, "ManualRoll")) == 4

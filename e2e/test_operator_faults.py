"""Faults under the operator on the real node: kill -9 rounds and a rolling restart, leader last.

- kill -9 (Cluster.kill_container: SIGKILL to the pod's node process from outside, the
  container's task on a real kubelet, the stand-in's `POST /kill` there; the node agent
  restarts it, restartCount going up) five times, alternating the leader and a follower,
  while the integration tier's ledger appends: after each kill the quorum heals (a leader, the
  same three voters with their directory ids, every voter caught up again after the kill; a
  new epoch when the leader was killed), the heal time of each round in the timings; no
  acknowledged record lost; the live quorum kept the nemesis invariants (quorum_watch.check).
- a config change rolls the pods one at a time under the ledger with a strict leader-last
  check: the order of the pods' deletions (the pods' uids and deletionTimestamps, recorded by
  a watcher) has every follower before the pod that led when the roll began, and that leader
  resigned first: DescribeQuorum showed another leader in a higher epoch before its pod got
  its deletionTimestamp. Every voter keeps its directory id; no acknowledged record lost.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from harness import TIMINGS, Cluster, wait_for
from quorum_watch import Fault, Watcher, check
from quorums import (  # noqa: F401 - the quorum and watched fixtures
    hosts,
    kill_and_heal,
    ledger_for,
    mq,
    quorum,
    settled,
    watched,
    whole,
)

pytestmark = pytest.mark.e2e


def test_kill_9_pods_repeatedly_leader_included_heals_and_loses_nothing(
    cluster: Cluster,
    watched: tuple[str, Any, Watcher],  # noqa: F811 - the fixture
) -> None:
    ns, ledger, watcher = watched
    faults: list[Fault] = []
    heals: list[tuple[str, float]] = []
    for rnd in range(5):
        before = wait_for(lambda: whole(watcher, 3), 120, "3 voters caught up")
        leader_round = rnd % 2 == 0
        victim = (
            before.leader
            if leader_round
            else min(k[0] for k in before.voters if k[0] != before.leader)
        )
        t0, s = kill_and_heal(cluster, ns, watcher, before, victim)
        heals.append((f"{'leader' if leader_round else 'follower'} quorum-{victim}", s.t - t0))
        faults.append(Fault(victim, t0, s.t, "kill"))
        wait_for(lambda: settled(cluster, ns, [0, 1, 2]), 120, "the status Running, 3 voters")
        ledger.wait_acked(20, timeout_s=60)
    for i, (what, secs) in enumerate(heals):
        TIMINGS[f"kill -9 round {i} ({what}) -> healed (s)"] = secs
    print("kill -9 heal times:", [(w, round(t, 2)) for w, t in heals])
    seen = watcher.stop()
    ledger.stop()
    result = ledger.check()
    print(f"ledger: {result}")
    assert result.acked >= 100
    assert check(seen, faults) == []


class PodDeletions:
    """Records when each pod of the quorum got its deletionTimestamp (a watch on the pods), and
    keeps each pod incarnation's node log as last read: a real kubelet removes a deleted pod's
    log directory soon after its containers stopped (the stand-in keeps it)."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        self.cluster, self.ns = cluster, ns
        self.deleted: dict[str, tuple[str, float]] = {}  # uid -> (pod name, monotonic time)
        self.logs: dict[str, str] = {}  # uid -> the node container's log, as last read
        self._names: dict[str, str] = {}  # uid -> pod name, of every incarnation seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for p in self.cluster.core.list_namespaced_pod(self.ns).items:
                self._names[p.metadata.uid] = p.metadata.name
                if p.metadata.deletion_timestamp and p.metadata.uid not in self.deleted:
                    self.deleted[p.metadata.uid] = (p.metadata.name, time.monotonic())
            for uid, name in self._names.items():
                said = self.cluster.pod_log(self.ns, name, uid)
                if said is not None and len(said) >= len(self.logs.get(uid, "")):
                    self.logs[uid] = said
            time.sleep(0.05)

    def stop(self) -> list[tuple[str, float]]:
        self._stop.set()
        self._thread.join(10)
        return sorted(self.deleted.values(), key=lambda x: x[1])


def assert_resigned_before_sigterm(said: str, leader: int, epoch: int) -> None:
    """The node's log names its SIGTERM, and before that line shows it followed another leader
    in a newer epoch than the one it led."""
    lines = said.splitlines()
    stop = next((i for i, x in enumerate(lines) if "received SIGTERM" in x), None)
    assert stop is not None, f"node {leader}'s log ends before its SIGTERM: {lines[-3:]}"
    followed = [
        (int(m[1]), int(m[2]))
        for x in lines[:stop]
        if (m := re.search(r"leader is (\d+) in epoch (\d+)", x))
    ]
    assert any(n != leader and e > epoch for n, e in followed), (
        f"node {leader} followed no newer leader before its SIGTERM: {followed}; {lines[stop]}"
    )


def test_a_config_change_rolls_followers_first_and_the_leader_resigns_before_its_pod_goes(
    cluster: Cluster,
    watched: tuple[str, Any, Watcher],  # noqa: F811 - the fixture
) -> None:
    ns, ledger, watcher = watched
    start = wait_for(lambda: whole(watcher, 3), 120, "3 voters caught up")
    dirs = {v["id"]: v["directoryId"] for v in mq(cluster, ns)["status"]["voters"]}
    uids = cluster.pod_uids(ns, 3)
    deletions = PodDeletions(cluster, ns)
    t0 = time.monotonic()
    cluster.kubectl(
        "patch",
        "metadataquorum",
        "quorum",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec": {"config": {"controller.quorum.request.timeout.ms": "2500"}}}',
    )

    def rolled() -> bool:
        now = cluster.pod_uids(ns, 3)
        return all(now[i] != uids[i] for i in range(3)) and bool(settled(cluster, ns, [0, 1, 2]))

    wait_for(rolled, 300, "every pod replaced with the new config, 3 voters Running")
    TIMINGS["rolling restart of 3 pods (s)"] = time.monotonic() - t0
    order = deletions.stop()
    seen = watcher.stop()
    ledger.stop()
    names = [name for name, _ in order]
    print("roll order:", [(n, round(t - t0, 2)) for n, t in order], "leader", start.leader)
    assert sorted(names) == ["quorum-0", "quorum-1", "quorum-2"], names
    leader_pod = f"quorum-{start.leader}"
    assert names[-1] == leader_pod, f"the leader {leader_pod} was not rolled last: {names}"
    # graceful: the old leader resigned while its pod was still running. Its own log says so:
    # it followed another leader in a newer epoch before its SIGTERM (the stop a pod deletion
    # sends). (A watcher polling the quorum cannot show the order: the operator deletes the
    # pod within tens of milliseconds of seeing the new leader.)
    said = cluster.pod_log(ns, leader_pod, uids[start.leader])
    if said is None:  # a real kubelet removed the deleted pod's logs: as the watcher read them
        said = deletions.logs.get(uids[start.leader])
    assert said is not None, f"no log of {leader_pod} ({uids[start.leader]})"
    assert_resigned_before_sigterm(said, start.leader, start.epoch)
    assert any(s.leader not in (-1, start.leader) and s.epoch > start.epoch for s in seen)
    events = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum,reason=LeaderResigning"
    ).items
    assert [e.message.split()[2] for e in events] == [str(start.leader)]  # "asked leader N ..."
    after = mq(cluster, ns)["status"]
    assert {v["id"]: v["directoryId"] for v in after["voters"]} == dirs  # the data stayed
    result = ledger.check()
    print(f"ledger: {result}")
    assert result.acked >= 20
    assert check(seen) == []  # the operator's own restarts never leave a minority caught up

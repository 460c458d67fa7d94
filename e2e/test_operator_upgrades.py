"""Upgrades, a bad image and the eviction of the leader's pod, on the real node under the
operator (issue 29), while the integration tier's ledger appends throughout.

Images (e2e/tools/build_images.py): metaquorum/node:e2e (this code, reports the package
version 0.1.0), node:e2e-next (the same code reporting 0.2.0 through
METAQUORUM_VERSION_OVERRIDE) and node:e2e-broken (exits at start: process.roles=broker).

- upgrade e2e -> e2e-next: the pods are deleted one at a time, followers first (highest ordinal
  first), the pod that led last, after it resigned (its own log shows it followed a newer
  leader before its SIGTERM); status.versions moves 0.1.0 -> 0.2.0 one pod at a time, the
  Upgrading condition True while rolling and False at the end. Then a downgrade is started and
  changed back mid-roll: every pod ends on e2e-next, the pods the downgrade did not reach were
  never restarted. DescribeQuorum (`settled`) and Kafka 4.3.1's own `MetadataQuorumCommand
  describe --status` (e2e/kafka_tool.py) agree with the status at the end; no
  acknowledged append lost; the live quorum never lost its caught-up majority.
- a bad image: the roll stops after one pod (Degraded UpgradeStalled naming it, a Warning
  Event), no second pod restarted for 15 s; the spec set back resumes: every pod on e2e again.
- the eviction API on the leader's pod (what `kubectl drain` calls): its SIGTERM finds it
  leading and its log shows it followed a newer leader before it exited (the node's graceful
  shutdown resigns and waits for the successor, bounded at 5 s, well inside the pod's 30 s
  grace period: no preStop hook is needed); a second eviction while that pod is away is
  refused by the PodDisruptionBudget (429); no acknowledged append lost.
- then, on the same quorum (one quorum less to form), a dangling voter: the node cordoned (its
  pods cannot be scheduled, as when a PVC is bound to a node that is gone) and a follower's pod
  deleted: status.membershipProblems names VoterWithoutPod with a Warning Event, the voter is
  not removed; uncordoned, the pod returns. The ledger runs through both.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from harness import TIMINGS, Cluster, wait_for
from kafka_tool import agrees_with_status, kafka_status
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from quorum_watch import Watcher, check
from quorums import (  # noqa: F401 - the quorum and watched fixtures
    cond,
    hosts,
    ledger_for,
    mq,
    quorum,
    settled,
    watched,
    whole,
)
from upgrade_rows import one_pod_at_a_time, upgraded_counts

pytestmark = pytest.mark.e2e

OLD, NEXT, BROKEN = "metaquorum/node:e2e", "metaquorum/node:e2e-next", "metaquorum/node:e2e-broken"


class Recorder:
    """Every 0.1 s: each pod incarnation's deletion (as first seen), its node log as last read
    (a real kubelet removes a deleted pod's logs soon after), and status.versions when it
    changes."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        self.cluster, self.ns = cluster, ns
        self.deleted: dict[str, tuple[str, float]] = {}
        self.logs: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self.versions: list[tuple[tuple[str, str], ...]] = []
        self.upgrading: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(0.1)

    def _sample(self) -> None:
        for p in self.cluster.core.list_namespaced_pod(self.ns).items:
            self.names[p.metadata.uid] = p.metadata.name
            if p.metadata.deletion_timestamp and p.metadata.uid not in self.deleted:
                self.deleted[p.metadata.uid] = (p.metadata.name, time.monotonic())
        for uid, name in list(self.names.items()):
            said = self.cluster.pod_log(self.ns, name, uid)
            if said is not None and len(said) >= len(self.logs.get(uid, "")):
                self.logs[uid] = said
        obj = mq(self.cluster, self.ns)
        rows = (obj.get("status") or {}).get("versions") or []
        now = tuple((r["pod"], r.get("version", "?")) for r in rows)
        if now and (not self.versions or self.versions[-1] != now):
            self.versions.append(now)
        c = cond(obj, "Upgrading")
        if c:
            self.upgrading.add((c["status"], c["reason"]))

    def stop(self) -> list[str]:
        """Stops sampling, then takes one last sample: what the caller's wait saw is recorded."""
        self._stop.set()
        self._thread.join(10)
        self._sample()
        return [n for n, _ in sorted(self.deleted.values(), key=lambda x: x[1])]

    def log_of(self, uid: str) -> str | None:
        return self.cluster.pod_log(self.ns, self.names.get(uid, ""), uid) or self.logs.get(uid)


def resigned_before_sigterm(said: str, leader: int, epoch: int) -> bool:
    """The node's log: before its SIGTERM it followed another leader in a newer epoch."""
    lines = said.splitlines()
    stop = next((i for i, x in enumerate(lines) if "received SIGTERM" in x), None)
    if stop is None:
        return False
    followed = [
        (int(m[1]), int(m[2]))
        for x in lines[:stop]
        if (m := re.search(r"leader is (\d+) in epoch (\d+)", x))
    ]
    return any(n != leader and e > epoch for n, e in followed)


def handed_over_after_sigterm(said: str, leader: int, epoch: int) -> bool:
    """The node's log: its SIGTERM found it leading, and before it exited it followed another
    leader in a newer epoch (its graceful shutdown resigned and waited for the successor), with
    no "did not complete" warning: it did not die leading."""
    lines = said.splitlines()
    stop = next((i for i, x in enumerate(lines) if "received SIGTERM" in x), None)
    if stop is None or "as leader" not in lines[stop].replace("Leader", "leader"):
        return False
    after = lines[stop + 1 :]
    if any("graceful shutdown did not complete" in x for x in after):
        return False
    followed = [
        (int(m[1]), int(m[2]))
        for x in after
        if (m := re.search(r"leader is (\d+) in epoch (\d+)", x))
    ]
    return any(n != leader and e > epoch for n, e in followed)


def set_image(cluster: Cluster, ns: str, image: str) -> None:
    cluster.kubectl(
        "patch", "metadataquorum", "quorum", "-n", ns, "--type=merge",
        "-p", f'{{"spec": {{"image": "{image}"}}}}',
    )  # fmt: skip


def versions(cluster: Cluster, ns: str) -> dict[str, tuple[str, str | None]]:
    rows = mq(cluster, ns)["status"].get("versions") or []
    return {r["pod"]: (r["image"], r.get("version")) for r in rows}


def all_on(cluster: Cluster, ns: str, image: str, version: str) -> bool:
    v = versions(cluster, ns)
    return len(v) == 3 and all(x == (image, version) for x in v.values())


def test_upgrade_leader_last_then_a_change_back_mid_roll(
    cluster: Cluster,
    watched: tuple[str, Any, Watcher],  # noqa: F811 - the fixture
) -> None:
    ns, ledger, watcher = watched
    start = wait_for(lambda: whole(watcher, 3), 120, "3 voters caught up")
    wait_for(lambda: all_on(cluster, ns, OLD, "0.1.0"), 30, "every pod reports 0.1.0")
    uids = cluster.pod_uids(ns, 3)
    rec = Recorder(cluster, ns)
    t0 = time.monotonic()
    set_image(cluster, ns, NEXT)
    wait_for(
        lambda: all_on(cluster, ns, NEXT, "0.2.0") and settled(cluster, ns, [0, 1, 2]),
        240,
        "every pod on e2e-next reporting 0.2.0, 3 voters Running",
    )
    TIMINGS["upgrade of 3 pods (s)"] = time.monotonic() - t0
    order = rec.stop()
    print("upgrade order:", order, "leader", start.leader, "versions:", rec.versions)
    leader_pod = f"quorum-{start.leader}"
    assert sorted(order) == ["quorum-0", "quorum-1", "quorum-2"], order
    assert order[-1] == leader_pod, f"the leader {leader_pod} was not rolled last: {order}"
    followers = order[:-1]
    assert followers == sorted(followers, reverse=True), f"not highest first: {order}"
    said = rec.log_of(uids[start.leader])
    assert said is not None and resigned_before_sigterm(said, start.leader, start.epoch), (
        f"{leader_pod} did not follow a newer leader before its SIGTERM"
    )
    # status.versions moved one pod at a time: 0, 1, 2, 3 pods on 0.2.0
    counts = upgraded_counts(rec.versions, "0.2.0")
    assert counts[-1] == 3, counts
    assert any(0 < c < 3 for c in counts), f"never a mixed quorum: {rec.versions}"
    assert one_pod_at_a_time(rec.versions, counts), (counts, rec.versions)
    assert ("True", "RollingImage") in rec.upgrading
    assert cond(mq(cluster, ns), "Upgrading")["status"] == "False"
    # a downgrade changed back mid-roll
    upgraded = cluster.pod_uids(ns, 3)
    rec = Recorder(cluster, ns)
    set_image(cluster, ns, OLD)
    wait_for(
        lambda: any(v == (OLD, "0.1.0") for v in versions(cluster, ns).values()),
        120,
        "a first pod back on e2e reporting 0.1.0",
    )
    set_image(cluster, ns, NEXT)
    wait_for(
        lambda: all_on(cluster, ns, NEXT, "0.2.0") and settled(cluster, ns, [0, 1, 2]),
        180,
        "every pod on e2e-next again",
    )
    order = rec.stop()
    now = cluster.pod_uids(ns, 3)
    touched = {f"quorum-{i}" for i in range(3) if now[i] != upgraded[i]}
    print("change back: deletions", order, "pods restarted", sorted(touched))
    assert touched and len(touched) < 3, (order, touched)
    assert all(order.count(p) == 2 for p in touched), order  # down to e2e and back
    # Kafka 4.3.1's own describe --status agrees with the status at the end (a leader change
    # between the two reads shows as a higher epoch: then both are read again)
    wait_for(
        lambda: agrees_with_status(kafka_status(cluster, ns, 3), mq(cluster, ns)["status"]),
        60,
        "Kafka's describe --status agreeing with the MetadataQuorum's status",
    )
    seen = watcher.stop()
    ledger.stop()
    result = ledger.check()
    print(f"ledger: {result}")
    assert result.acked >= 20
    assert check(seen) == []


def test_a_bad_image_stops_after_one_pod_and_the_fixed_spec_resumes(
    cluster: Cluster,
    watched: tuple[str, Any, Watcher],  # noqa: F811 - the fixture
) -> None:
    ns, ledger, watcher = watched
    wait_for(lambda: whole(watcher, 3), 120, "3 voters caught up")
    uids = cluster.pod_uids(ns, 3)
    set_image(cluster, ns, BROKEN)

    def stalled() -> dict[str, Any] | None:
        c = cond(mq(cluster, ns), "Degraded")
        return c if c.get("reason") == "UpgradeStalled" and c["status"] == "True" else None

    degraded = wait_for(stalled, 120, "Degraded UpgradeStalled")
    print("degraded:", degraded["message"])
    bad = re.match(r"(quorum-\d) does not become ready on image", degraded["message"])
    assert bad, degraded["message"]
    assert "set it back to" in degraded["message"]
    t0 = time.monotonic()
    while time.monotonic() - t0 < 15:  # nothing rolled further
        now = cluster.pod_uids(ns, 3)
        changed = [f"quorum-{i}" for i in range(3) if now[i] != uids[i]]
        assert changed == [bad[1]], changed
        time.sleep(1)
    events = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum,reason=UpgradeStalled"
    ).items
    assert events and bad[1] in events[0].message
    assert cond(mq(cluster, ns), "Upgrading")["reason"] == "UpgradeStalled"
    set_image(cluster, ns, OLD)
    wait_for(
        lambda: all_on(cluster, ns, OLD, "0.1.0") and settled(cluster, ns, [0, 1, 2]),
        180,
        "the broken pod back on e2e, 3 voters Running",
    )
    now = cluster.pod_uids(ns, 3)
    assert [f"quorum-{i}" for i in range(3) if now[i] != uids[i]] == [bad[1]]
    assert cond(mq(cluster, ns), "Degraded")["status"] == "False"
    seen = watcher.stop()
    ledger.stop()
    result = ledger.check()
    print(f"ledger: {result}")
    assert check(seen) == []


def test_evicting_the_leaders_pod_resigns_first_then_a_voter_without_a_pod_is_named(
    cluster: Cluster,
    watched: tuple[str, Any, Watcher],  # noqa: F811 - the fixture
) -> None:
    """One quorum's lifecycle for both (a quorum less to form): the eviction of the leader's
    pod under the PDB, then a voter whose pod cannot be scheduled; the ledger throughout."""
    ns, ledger, watcher = watched
    start = wait_for(lambda: whole(watcher, 3), 120, "3 voters caught up")
    policy = client.PolicyV1Api(cluster.api)
    wait_for(
        lambda: (
            policy.read_namespaced_pod_disruption_budget("quorum", ns).status.disruptions_allowed
            == 1
        ),
        60,
        "the PDB allows one disruption",
    )
    uids = cluster.pod_uids(ns, 3)
    rec = Recorder(cluster, ns)
    leader_pod = f"quorum-{start.leader}"

    def evict(pod: str) -> None:
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=ns))
        cluster.core.create_namespaced_pod_eviction(pod, ns, body)

    t0 = time.monotonic()
    evict(leader_pod)
    other = f"quorum-{(start.leader + 1) % 3}"
    with pytest.raises(ApiException) as refused:
        evict(other)
    assert refused.value.status == 429, refused.value
    wait_for(
        lambda: (
            cluster.pod_uids(ns, 3)[start.leader] != uids[start.leader]
            and settled(cluster, ns, [0, 1, 2])
        ),
        180,
        f"{leader_pod} back, 3 voters Running",
    )
    TIMINGS["eviction of the leader's pod to 3 voters again (s)"] = time.monotonic() - t0
    rec.stop()
    said = rec.log_of(uids[start.leader])
    assert said is not None and handed_over_after_sigterm(said, start.leader, start.epoch), (
        f"{leader_pod} did not hand over to a newer leader between its SIGTERM and its exit:"
        f" {(said or '').splitlines()[-6:]}"
    )
    assert cluster.pod_uids(ns, 3)[(start.leader + 1) % 3] == uids[(start.leader + 1) % 3]
    assert check(watcher.stop()) == []
    voter_without_a_pod_is_named_not_removed(cluster, ns)
    ledger.stop()
    result = ledger.check()
    print(f"ledger: {result}")
    assert result.acked >= 20


def voter_without_a_pod_is_named_not_removed(cluster: Cluster, ns: str) -> None:
    """The node cordoned (its pods cannot be scheduled, as when a PVC is bound to a node that
    is gone) and a follower's pod deleted: VoterWithoutPod in status and as a Warning Event,
    the voter not removed; uncordoned, the pod returns and the problem clears."""
    node = cluster.core.list_node().items[0].metadata.name
    victim = next(i for i in range(3) if i != mq(cluster, ns)["status"]["leader"])
    cluster.kubectl("cordon", node)
    try:
        # the pod's node is "gone" for the scheduler: the StatefulSet's new pod stays Pending
        cluster.core.delete_namespaced_pod(f"quorum-{victim}", ns)

        def named() -> dict[str, Any] | None:
            found = mq(cluster, ns)["status"].get("membershipProblems") or []
            return next(
                (p for p in found if p["kind"] == "VoterWithoutPod" and p["id"] == victim), None
            )

        problem = wait_for(named, 90, f"VoterWithoutPod {victim} in status.membershipProblems")
        print("problem:", problem)
        assert f"quorum-{victim} cannot be scheduled" in problem["message"]

        # kopf posts Events from a queue of its own, after the handler's status patch: wait
        def event() -> Any:
            return cluster.core.list_namespaced_event(
                ns, field_selector="involvedObject.kind=MetadataQuorum,reason=VoterWithoutPod"
            ).items

        events = wait_for(event, 30, "the VoterWithoutPod Warning Event")
        assert f"voter {victim}" in events[0].message
        time.sleep(5)  # a few reconciles: the voter stays (a majority may need it)
        assert victim in [v["id"] for v in mq(cluster, ns)["status"]["voters"]]
    finally:
        cluster.kubectl("uncordon", node)
    wait_for(lambda: settled(cluster, ns, [0, 1, 2]), 180, "the pod back, 3 voters Running")
    assert not mq(cluster, ns)["status"].get("membershipProblems")

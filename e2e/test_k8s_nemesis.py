"""The Kubernetes nemesis (issue 33): seeded faults applied to the cluster under an operator-run
quorum of the real node, a client inside the cluster's network checked by porcupine, the ledger
and the operator's invariants checked throughout. Real-kubelet target only.

`E2E_K8S_NEMESIS_SCHEDULES` schedules (10 in `make e2e`; `make e2e-nemesis-k8s` runs more)
from consecutive seeds starting at `E2E_K8S_NEMESIS_SEED` (random, printed), each two faults
of k8s_nemesis.KINDS (pod partitions by iptables in the pods' namespaces, a frozen container,
kill -9, kube-apiserver stopped while a container is killed), held, healed, and the quorum
seen whole again (a leader, three voters, every one caught up since the heal) before the next.
All along: `mqnemesis run` (tests/nemesis/go, the process nemesis's Go clients: Produce acks=-1
and consumer Fetch, every operation recorded) from the test process, which runs in the
cluster's network namespace, on the pods' IPs; quorum_watch.Watcher records DescribeQuorum every
0.1 s. At the end: porcupine (`mqnemesis check`) on the whole history, the ledger
(tests/nemesis/ledger.check: every replica's segment files, read from its PV, against the
history: nothing acknowledged lost, no duplicate, nothing invented, replicas identical below
the HW), quorum_watch.check (a majority caught up unless the nemesis took the others down, no
leaderless stretch over 20 s, one voter change at a time), and the MetadataQuorum settled on
three voters agreeing with the live quorum after each API server outage (the operator resumed
cleanly, acting on nothing stale).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness import ROOT, TIMINGS, Cluster, wait_for
from k8s_faults import PodFaults
from k8s_nemesis import KINDS, NETWORK, Fault, schedule
from quorum_watch import Fault as Down
from quorum_watch import Seen, Watcher, check
from quorums import describe, hosts, quorum, settled, whole  # noqa: F401 - the quorum fixture

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tests.nemesis import ledger
from tests.nemesis.tools import mqnemesis_binary

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("E2E_K8S_NEMESIS_SEED") or random.SystemRandom().randrange(1, 10**6))
SCHEDULES = int(os.environ.get("E2E_K8S_NEMESIS_SCHEDULES", "10"))
# the API server's outage: 30-40 s in make e2e (the 30-90 s with E2E_K8S_NEMESIS_LONG=1)
API_S = (30.0, 90.0) if os.environ.get("E2E_K8S_NEMESIS_LONG") == "1" else (30.0, 40.0)
HEAL_S = 120.0
CALM_S = 2.0


class K8sNemesis:
    def __init__(self, cluster: Cluster, ns: str, watcher: Watcher) -> None:
        self.cluster, self.ns, self.watcher = cluster, ns, watcher
        self.faults = PodFaults(cluster, ns)
        self.down: list[Down] = []
        self.injected: dict[str, int] = {}
        self.heal_times: list[float] = []

    def target(self, f: Fault, s: Seen) -> int:
        if f.role == "leader":
            return s.leader
        followers = sorted(k[0] for k in s.voters if k[0] != s.leader)
        return followers[f.pick % len(followers)]

    def whole_since(self, wall_ms: float, t: float) -> Seen | None:
        s = whole(self.watcher, 3)
        if s is None or s.t <= t:
            return None
        return s if all(s.caught_up_since(k, wall_ms) for k in s.voters) else None

    def apply(self, f: Fault) -> None:
        before = wait_for(lambda: whole(self.watcher, 3), HEAL_S, "3 voters, all caught up")
        victim = self.target(f, before)
        others = sorted(k[0] for k in before.voters if k[0] != victim)
        t0, start_ns = time.monotonic(), time.time_ns()
        fx = self.faults
        if f.kind == "isolate":
            for o in others:
                fx.drop(victim, o)
        elif f.kind == "bridge":
            fx.drop(others[0], others[1])
        elif f.kind == "one-way":
            for o in others:
                fx.drop(victim, o, both_ways=False)
        elif f.kind == "freeze":
            fx.freeze(victim)
        elif f.kind == "kill":
            fx.kill(victim)
        elif f.kind == "apiserver":
            pid = fx.pid(victim)  # resolved while the API answers
            fx.apiserver_stop()
            os.kill(pid, signal.SIGKILL)
        time.sleep(f.hold if f.kind != "kill" else 0.0)
        if f.kind in NETWORK:
            fx.heal_net()
        elif f.kind == "freeze":
            fx.thaw(victim)
        elif f.kind == "apiserver":
            fx.apiserver_start()
        fx.record(f"{f} on quorum-{victim}", start_ns)
        healed_wall, healed_t = time.time() * 1000, time.monotonic()
        # the nemesis took down the victim (network: each side may see the other as down)
        took = [victim] if f.kind != "bridge" else others
        for o in took:
            self.down.append(Down(o, t0, float("inf"), f.kind))
        s = wait_for(
            lambda: self.whole_since(healed_wall, healed_t),
            HEAL_S,
            f"{f} on quorum-{victim}: the quorum whole again",
        )
        for i in range(len(self.down) - len(took), len(self.down)):
            d = self.down[i]
            self.down[i] = Down(d.node, d.start, s.t, d.kind)
        self.heal_times.append(s.t - healed_t)
        self.injected[f.kind] = self.injected.get(f.kind, 0) + 1
        if f.kind == "apiserver":  # the operator resumed: status and live quorum agree
            wait_for(
                lambda: settled(self.cluster, self.ns, [0, 1, 2]),
                HEAL_S,
                "the MetadataQuorum settled after the API server came back",
            )
        time.sleep(CALM_S)


def _estimate_s(plan: list[list[Fault]]) -> float:
    return sum(f.hold + 12.0 + (25.0 if f.kind == "apiserver" else 0.0) for s in plan for f in s)


@pytest.mark.timeout(600 + 120 * SCHEDULES)
def test_k8s_nemesis_keeps_linearizability_and_the_invariants(
    cluster: Cluster,
    quorum: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    if cluster.containerd is None:
        pytest.skip("the Kubernetes nemesis needs the real-kubelet target (E2E_CLUSTER=local)")
    ns = quorum
    mqnemesis = mqnemesis_binary()
    plan = [schedule(SEED + i, apiserver_s=API_S) for i in range(SCHEDULES)]
    print(
        f"\nk8s nemesis: seeds {SEED}..{SEED + SCHEDULES - 1}: "
        + "; ".join(" ".join(map(str, s)) for s in plan)
        + f"\nre-run: E2E_K8S_NEMESIS_SEED={SEED} E2E_K8S_NEMESIS_SCHEDULES={SCHEDULES} "
        "make e2e-nemesis-k8s"
    )
    watcher = Watcher(hosts(ns, 3)).start()
    nemesis = K8sNemesis(cluster, ns, watcher)
    ips = [nemesis.faults.ip(o) for o in range(3)]
    duration = _estimate_s(plan) + 20
    history = tmp_path / "history.jsonl"
    client = subprocess.Popen(
        [
            *(str(mqnemesis), "run", "-endpoints", ",".join(f"{ip}:9093" for ip in ips)),
            *("-clients", "4", "-duration", f"{duration:.0f}s", "-seed", str(SEED)),
            *("-out", str(history)),
        ],
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "client.log").open("wb"),
        text=True,
    )
    t_start = time.monotonic()
    try:
        for i, sched in enumerate(plan):
            print(f"schedule {SEED + i}: {' '.join(map(str, sched))}", flush=True)
            for f in sched:
                nemesis.apply(f)
        ops = json.loads(client.communicate(timeout=duration + 120)[0] or "{}")
    finally:
        nemesis.faults.heal_all()
        if client.poll() is None:
            client.kill()
            client.wait(10)
        seen = watcher.stop()
    total = time.monotonic() - t_start
    (tmp_path / "nemesis.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in nemesis.faults.log)
    )
    done = subprocess.run(
        [
            *(str(mqnemesis), "check", "-history", str(history)),
            *("-faults", str(tmp_path / "nemesis.jsonl"), "-html", str(tmp_path / "p.html")),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    porcupine = json.loads(done.stdout) if done.stdout.strip() else {"error": done.stderr[-500:]}
    violations = _ledger(cluster, ns, history)
    print(
        f"k8s nemesis: {SCHEDULES} schedules in {total:.0f} s, faults {nemesis.injected}, "
        f"client ops {ops}, porcupine {porcupine.get('result')} "
        f"({porcupine.get('operations')} ops), ledger {len(violations)} violations, "
        f"longest heal {max(nemesis.heal_times, default=0):.1f} s"
    )
    TIMINGS[f"k8s nemesis: {SCHEDULES} schedules (s)"] = total
    TIMINGS["k8s nemesis: longest heal after a fault (s)"] = max(nemesis.heal_times, default=0)
    assert porcupine.get("result") == "Ok", porcupine
    assert not violations, violations[:10]
    assert check(seen, nemesis.down) == []
    assert sum(nemesis.injected.values()) == 2 * SCHEDULES
    if SCHEDULES >= 6:
        assert set(nemesis.injected) == set(KINDS)
    assert porcupine.get("appends_ok", 0) >= 50 * SCHEDULES


def _ledger(cluster: Cluster, ns: str, history: Path) -> list[str]:
    """Every replica's log from its PV once all three reached the same HW, against the
    history (tests/nemesis/ledger.check)."""
    final: list[int] = []

    def converged() -> bool:
        info = describe(ns, 3)
        ends = {v.log_end_offset for v in info.voters}
        if len(ends) == 1 and info.high_watermark == ends.pop():
            final.append(info.high_watermark)
            return True
        return False

    wait_for(converged, 60, "every voter at the leader's HW")
    replicas = {}
    for o in range(3):
        pv = cluster.pv_path(ns, f"data-quorum-{o}")
        (data,) = {p.parent for p in pv.rglob("__cluster_metadata-0")}
        replicas[o] = ledger.replica_records(data)
    return ledger.check(ledger.load_history(history), replicas, final[-1])

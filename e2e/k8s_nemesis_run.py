"""The Kubernetes nemesis's run: faults applied and healed, the client, and the verdicts.

Role: the library of test_k8s_nemesis.py and test_k8s_nemesis_broken.py (a test module imports
this, never another test module). `K8sNemesis.apply(fault)` resolves the fault's target against
the live quorum (quorum_watch.Watcher), applies it (k8s_faults.PodFaults), holds it, heals it
and waits until the quorum is whole again (a leader, three voters, every one caught up since
the heal), recording the nemesis's own fault windows for quorum_watch.check. `start_client`
runs `mqnemesis run` (tests/nemesis/go: Produce acks=-1 and consumer Fetch, every operation
recorded) from the test process, which is inside the cluster's network namespace, on the pods'
IPs; `porcupine` checks the history (`mqnemesis check`); `ledger_violations` reads every
replica's segment files from its PV once all reached the leader's HW and checks them against
the history (tests/nemesis/ledger.check).

Invariants: one fault at a time, healed before the next; a fault's window ends when the test saw
the quorum whole again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import ROOT, Cluster, wait_for
from k8s_faults import PodFaults
from k8s_nemesis import NETWORK, Fault
from quorum_watch import Fault as Down
from quorum_watch import Seen, Watcher
from quorums import describe, settled, whole

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tests.nemesis import ledger
from tests.nemesis.tools import mqnemesis_binary

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


def estimate_s(plan: list[list[Fault]]) -> float:
    return sum(f.hold + 12.0 + (25.0 if f.kind == "apiserver" else 0.0) for s in plan for f in s)


def start_client(ips: list[str], duration_s: float, seed: int, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *(str(mqnemesis_binary()), "run", "-endpoints", ",".join(f"{ip}:9093" for ip in ips)),
            *("-clients", "4", "-duration", f"{duration_s:.0f}s", "-seed", str(seed)),
            *("-out", str(out / "history.jsonl")),
        ],
        stdout=subprocess.PIPE,
        stderr=(out / "client.log").open("wb"),
        text=True,
    )


def porcupine(out: Path, fault_log: list[dict[str, Any]]) -> dict[str, Any]:
    (out / "nemesis.jsonl").write_text("".join(json.dumps(x) + "\n" for x in fault_log))
    done = subprocess.run(
        [
            *(str(mqnemesis_binary()), "check", "-history", str(out / "history.jsonl")),
            *("-faults", str(out / "nemesis.jsonl"), "-html", str(out / "porcupine.html")),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if not done.stdout.strip():
        return {"error": done.stderr[-500:]}
    return dict(json.loads(done.stdout))


def ledger_violations(cluster: Cluster, ns: str, history: Path) -> list[str]:
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

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

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import log_voters
from harness import ROOT, Cluster, wait_for
from k8s_faults import APISERVER, PodFaults
from k8s_nemesis import NETWORK, OPERATOR_WORK, SLOW, Fault
from k8s_operator_work import OperatorWork
from pod_watch import operator_down
from quorum_watch import Fault as Down
from quorum_watch import Seen, Watcher, check
from quorums import describe, hosts, settled, whole

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tests.nemesis import ledger
from tests.nemesis.tools import mqnemesis_binary

HEAL_S = 120.0
# a pod's readiness after the API server or the node agents came back: the node lifecycle
# controller marks every pod not Ready once it finds the node's lease older than its grace
# period (50 s), which can be after the quorum is whole and the MetadataQuorum settled
DOUBT_S = 90.0
# the faults that put every pod's readiness in doubt (the API server or the node agents away)
READINESS_IN_DOUBT = ("agents", "apiserver", "reboot")
CALM_S = 2.0


class K8sNemesis:
    def __init__(self, cluster: Cluster, ns: str, watcher: Watcher) -> None:
        self.cluster, self.ns, self.watcher = cluster, ns, watcher
        self.faults = PodFaults(cluster, ns)
        self.down: list[Down] = []
        self.injected: dict[str, int] = {}
        self.heal_times: list[float] = []
        self.heals: list[tuple[float, str]] = []  # (heal time, which fault)
        self.majority_down: list[tuple[float, float]] = []  # windows with no majority up
        # pods the nemesis made not Ready (the node agents' and the API server's faults: all)
        self.pods_down: list[Down] = []
        # readiness in doubt (pod_watch.operator_down's doubt windows): the API server or the
        # node agents were away; until DOUBT_S after the MetadataQuorum settled again
        self.doubt: list[tuple[float, float]] = []
        self.timeline: list[tuple[float, str]] = []  # (monotonic, what): for the messages
        self.work = OperatorWork(cluster, ns, watcher, self.faults, self.down, self.mark)

    def mark(self, what: str) -> None:
        self.timeline.append((time.monotonic(), what))

    def where(self, t: float) -> str:
        """What the nemesis was doing at `t` (the last mark before it, and how long before)."""
        before = [(a, w) for a, w in self.timeline if a <= t]
        if not before:
            return "before the first fault"
        a, w = before[-1]
        return f"{t - a:.1f} s after '{w}'"

    def longest_leaderless(self, seen: list[Seen]) -> str:
        """The longest stretch with no answering leader, and what the nemesis was doing."""
        best, at, start = 0.0, 0.0, None
        for x in seen:
            if x.leader < 0:
                start = x.t if start is None else start
                if x.t - start > best:
                    best, at = x.t - start, start
            else:
                start = None
        return f"{best:.1f} s" + (f" ({self.where(at)})" if best else "")

    def watcher_gaps(self, seen: list[Seen]) -> str:
        """How often the watcher answered: a starved test process shows as long gaps."""
        gaps = [(b.t - a.t, a.t) for a, b in itertools.pairwise(seen)]
        if not gaps:
            return "no answers"
        gap, at = max(gaps)
        return f"{len(seen)} answers, the longest gap {gap:.1f} s ({self.where(at)})"

    def margins(self, seen: list[Seen]) -> str:
        """How close the run came to quorum_watch.check's bounds: the longest a new epoch's
        leader took (from its first answer) to show a majority caught up (bound 3 s, unless
        the nemesis took the others down), and the longest leaderless stretch outside the
        windows in which the nemesis took a majority down (bound 20 s)."""
        epoch, first, worst, worst_at = -1, 0.0, 0.0, 0.0
        majority = True
        for x in seen:
            if x.leader < 0:
                continue
            if x.epoch != epoch:
                epoch, first, majority = x.epoch, x.t, False
            if not majority and 2 * len(x.up & x.voters) > len(x.voters):
                majority = True
                if x.t - first > worst:
                    worst, worst_at = x.t - first, first
        gap, gap_at, last = 0.0, 0.0, seen[0].t if seen else 0.0
        for x in seen:  # as check measures it: from the last answer with a leader
            if x.leader >= 0:
                last = x.t
            elif not any(a <= x.t <= b + 20 for a, b in self.majority_down) and x.t - last > gap:
                gap, gap_at = x.t - last, last
        return (
            f"a new leader's majority caught up after at most {worst:.1f} s "
            f"({self.where(worst_at)}); leaderless at most {gap:.1f} s outside the nemesis's "
            f"majority-down windows ({self.where(gap_at)})"
        )

    def voter_changes(self, seen: list[Seen]) -> list[str]:
        """Each voter change the watcher saw: when, after what, how long until the HW passed
        the LEO of its first sighting (the old 'seen committed' bound), and until the next."""
        out: list[str] = []
        changes = [
            (i, b) for i, (a, b) in enumerate(itertools.pairwise(seen), 1)
            if a.leader >= 0 and b.leader >= 0 and a.voters != b.voters
        ]  # fmt: skip
        for n, (i, b) in enumerate(changes):
            nxt = changes[n + 1][1].t if n + 1 < len(changes) else None
            done = next((x.t for x in seen[i:] if x.hw >= b.leo and x.epoch == b.epoch), None)
            out.append(
                f"{len(b.voters)} voters at {b.t:.1f} ({self.where(b.t)}): hw past its first "
                f"LEO after {'-' if done is None else f'{done - b.t:.1f} s'}, next change "
                f"after {'-' if nxt is None else f'{nxt - b.t:.1f} s'}"
            )
        return out

    def violations(
        self,
        seen: list[Seen],
        pods: list[tuple[float, frozenset[int]]] | None = None,
        log_sets: log_voters.VoterSets | None = None,
        gone: list[frozenset[int]] | None = None,
    ) -> list[str]:
        """quorum_watch.check, but a leaderless stretch inside a window in which the nemesis
        itself took a majority down (a reboot, a lost PVC under a frozen voter) is no
        violation of the operator's; pod_watch.operator_down on the pods' readiness; and the
        log's own VotersRecords one member apart (log_voters.jumps), which also tell a voter
        set the watcher saw jump by two members (two changes committed within one of its
        polls) from a real jump. Each names its invariant and what the nemesis was doing."""
        out = []
        sets = None if log_sets is None else [v for _, v in log_sets]
        for v in log_voters.jumps(log_sets or []):
            out.append(f"log [one voter change at a time] {v}")
        for v in check(seen, self.down, log_sets=sets):
            t = float(v.split(":", 1)[0].removeprefix("t="))
            if "no leader" in v and any(a <= t <= b + 20 for a, b in self.majority_down):
                continue
            rule = (
                "leaderless over 20 s" if "no leader" in v
                else "one voter change at a time" if "voter set changed" in v
                else "a majority caught up"
            )  # fmt: skip
            out.append(f"quorum_watch [{rule}] {v} ({self.where(t)})")
        for v in operator_down(
            pods or [], 3, self.down + self.pods_down, gone=gone, doubt=self.doubt
        ):
            t = float(v.split(":", 1)[0].removeprefix("t="))
            out.append(f"pod_watch [never a majority of pods down by the operator] {v} "
                       f"({self.where(t)})")  # fmt: skip
        return out

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
        old_dir = next(k[1] for k in before.voters if k[0] == victim)
        t0, start_ns = time.monotonic(), time.time_ns()
        self.mark(f"{f} on quorum-{victim}")
        took = self._inject(f, victim, others)
        self.mark(f"{f} on quorum-{victim}: healed")
        self.faults.record(f"{f} on quorum-{victim}", start_ns)
        healed_wall, healed_t = time.time() * 1000, time.monotonic()
        for o in took:
            self.down.append(Down(o, t0, float("inf"), f.kind))
        s = wait_for(
            lambda: self.whole_since(healed_wall, healed_t),
            HEAL_S * (2 if f.kind in SLOW else 1),
            f"{f} on quorum-{victim}: the quorum whole again (3 voters, each caught up since the "
            f"heal); the watcher's latest answer: {self.watcher.latest()}",
        )
        self.mark(f"{f} on quorum-{victim}: whole again")
        if f.kind in READINESS_IN_DOUBT:
            self.pods_down += [Down(o, t0, s.t, f.kind) for o in range(3)]
        if 2 * len(took) > 3:  # the nemesis itself took a majority down: no leader meanwhile
            self.majority_down.append((t0, s.t))
        for i in range(len(self.down) - len(took), len(self.down)):
            d = self.down[i]
            self.down[i] = Down(d.node, d.start, s.t, d.kind)
        self.heal_times.append(s.t - healed_t)
        self.heals.append((s.t - healed_t, f"{f} on quorum-{victim}"))
        self.injected[f.kind] = self.injected.get(f.kind, 0) + 1
        if f.kind in ("apiserver", "reboot", "pvc-lost"):
            # the operator resumed (a lost disk: replaced the voter): status and quorum agree
            def done() -> dict[str, Any] | None:
                obj = settled(self.cluster, self.ns, [0, 1, 2])
                if obj is None or f.kind != "pvc-lost":
                    return obj
                dirs = {v["id"]: v["directoryId"] for v in obj["status"]["voters"]}
                return obj if dirs.get(victim) not in (None, old_dir) else None

            wait_for(done, 2 * HEAL_S, f"{f}: the MetadataQuorum settled")
        if f.kind in READINESS_IN_DOUBT:
            self.doubt.append((t0, time.monotonic() + DOUBT_S))
        time.sleep(CALM_S)

    def _inject(self, f: Fault, victim: int, others: list[int]) -> list[int]:
        """Apply `f`, hold it, heal it; returns the voters it took down (a partition: each
        side may see the other as down)."""
        fx = self.faults
        if f.kind in OPERATOR_WORK:
            self.work.run(f, victim)  # records its own windows (self.down)
            return []
        if f.kind in NETWORK:
            if f.kind == "bridge":
                fx.drop(others[0], others[1])
            for o in others if f.kind != "bridge" else ():
                fx.drop(victim, o, both_ways=f.kind == "isolate")
            time.sleep(f.hold)
            fx.heal_net()
            return others if f.kind == "bridge" else [victim]
        if f.kind == "freeze":
            fx.freeze(victim)
            time.sleep(f.hold)
            fx.thaw(victim)
        elif f.kind == "kill":
            before = fx.restarts(victim)
            fx.kill(victim)
            fx.restarted(victim, before)
        elif f.kind == "apiserver":
            pid = fx.pid(victim)  # resolved while the API answers
            before = fx.restarts(victim)
            fx.agent_stop(APISERVER)
            os.kill(pid, signal.SIGKILL)
            time.sleep(f.hold)
            fx.agent_start(APISERVER)
            fx.restarted(victim, before)
        elif f.kind == "agents":  # kubelet + containerd restarted under running pods
            fx.agent_stop("kubelet")
            fx.agent_stop("containerd")
            time.sleep(f.hold)
            fx.agent_start("containerd")
            fx.agent_start("kubelet")
        elif f.kind == "reboot":  # every pod killed at once, then the node agents restarted
            fx.agent_stop("kubelet")
            fx.kill_every_task()
            fx.agent_stop("containerd")
            time.sleep(f.hold)
            fx.agent_start("containerd")
            fx.agent_start("kubelet")
            return [0, 1, 2]
        elif f.kind == "pvc-lost":  # the target's PVC lost while another voter is frozen
            frozen = others[0]
            fx.freeze(frozen)
            self.cluster.kubectl(
                "delete", "pvc", f"data-quorum-{victim}", "-n", self.ns, "--wait=false"
            )
            self.cluster.kubectl("delete", "pod", f"quorum-{victim}", "-n", self.ns, "--wait=false")
            time.sleep(f.hold)
            fx.thaw(frozen)
            return [victim, frozen]
        return [victim]


def estimate_s(plan: list[list[Fault]]) -> float:
    """How long the schedules take (the client's duration): hold, heal and calm, and the slow
    kinds' recoveries as measured here."""
    extra = {"apiserver": 25.0, "agents": 20.0, "reboot": 60.0, "pvc-lost": 60.0}
    extra |= {"operator-cut": 60.0, "scale": 120.0, "roll": 60.0}
    return sum(f.hold + 12.0 + extra.get(f.kind, 0.0) for s in plan for f in s)


def start_client(
    cluster: Cluster, ns: str, duration_s: float, seed: int, out: Path
) -> subprocess.Popen[str]:
    """`mqnemesis run` on the pods' stable names, resolved by the cluster's CoreDNS (the client
    runs in a mount namespace of its own whose /etc/resolv.conf names it), so it follows a pod
    recreated under a new IP as the quorum's own members do."""
    assert cluster.pod_logs is not None
    resolv = cluster.pod_logs.parent / "resolv.conf"  # nameserver: the cluster's CoreDNS
    endpoints = ",".join(f"{h}:{p}" for h, p in hosts(ns, 3))
    return subprocess.Popen(
        [
            *("unshare", "--mount", "--propagation", "private", "sh", "-c"),
            'mount --bind "$0" /etc/resolv.conf && exec "$@"',
            str(resolv),
            *(str(mqnemesis_binary()), "run", "-endpoints", endpoints),
            # 2 closed-loop clients: on an idle machine 4 made ~225k operations in 10 schedules,
            # more than porcupine could check in its time (result Unknown, a clean-clone CI run)
            *("-clients", "2", "-duration", f"{duration_s:.0f}s", "-seed", str(seed)),
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
            *("-timeout", "300s"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if not done.stdout.strip():
        return {"error": done.stderr[-500:]}
    return dict(json.loads(done.stdout))


def log_voter_sets(cluster: Cluster, ns: str) -> log_voters.VoterSets:
    """Every VotersRecord in the three replicas' logs, read from their PVs (after
    ledger_violations saw them converge), merged by offset."""
    replicas = []
    for o in range(3):
        pv = cluster.pv_path(ns, f"data-quorum-{o}")
        (data,) = {p.parent for p in pv.rglob("__cluster_metadata-0")}
        replicas.append(log_voters.voter_sets(data))
    return log_voters.merged(replicas)


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

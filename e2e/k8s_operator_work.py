"""The Kubernetes nemesis's faults combined with the operator's own work (issue 33).

Role: the three LONG_KINDS of k8s_nemesis (`operator-cut`, `scale`, `roll`) applied by
`OperatorWork.run`: a fault is put in place first and held until the operator can see it
(fetch timeout + 1 s: the operator counts a voter caught up only within
controller.quorum.fetch.timeout.ms, 2 s), then the operator is asked for work (a roll: a spec
change of the node container's CPU request; a scale: spec.replicas), the fault is held on and
healed, and the work is awaited to its end (the MetadataQuorum settled on the voters asked for,
a roll: every pod at the StatefulSet's update revision). What the operator does meanwhile is
judged by the checks that run throughout (quorum_watch.check: one voter change at a time, each
committed before the next, a majority caught up unless the nemesis took the others down;
pod_watch.operator_down: never a majority of pods down unless the nemesis took them): a pod it
deletes while the fault holds a voter down is a majority down that is not the nemesis's.

Invariants: every voter the nemesis takes down is recorded as a quorum_watch.Fault window
(`K8sNemesis.down`) from the fault until the leader saw it caught up again, never longer, so
the operator's work around it is judged; the quorum is back at three voters when `run` returns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness import Cluster, wait_for
from k8s_faults import PodFaults
from k8s_nemesis import Fault
from quorum_watch import Fault as Down
from quorum_watch import Seen, Watcher
from quorums import settled

SEEN_S = 3.0  # the operator's view of a voter lags: fetch timeout (2 s) + 1 s
WORK_S = 420.0  # a scale 3 -> 5 or a roll of 3 pods, on a loaded 2-core machine


@dataclass
class OperatorWork:
    """The parts of a k8s_nemesis_run.K8sNemesis this needs (`down`: its windows list)."""

    cluster: Cluster
    ns: str
    watcher: Watcher
    faults: PodFaults
    down: list[Down]
    mark: Callable[[str], None]
    rolls: int = 0  # spec changes asked for (each a new CPU request)

    # --- asking the operator -------------------------------------------------------------------
    def _patch(self, spec: dict[str, Any]) -> None:
        self.cluster.kubectl(
            "patch", "metadataquorum", "quorum", "-n", self.ns, "--type=merge",
            "-p", json.dumps({"spec": spec}),
        )  # fmt: skip

    def ask_roll(self) -> None:
        """A spec change that changes the pod template: every pod is rolled (OnDelete)."""
        self.rolls += 1
        self._patch({"resources": {"requests": {"cpu": f"{10 + self.rolls % 50}m"}}})

    def ask_replicas(self, n: int) -> None:
        self._patch({"replicas": n})

    # --- waiting ---------------------------------------------------------------------------------
    def caught_up(self, o: int, wall_ms: float) -> Seen | None:
        """The latest answer if a leader saw voter `o` caught up since `wall_ms`."""
        s = self.watcher.latest()
        if s is None or s.leader < 0:
            return None
        keys = [k for k in s.voters if k[0] == o]
        return s if keys and s.caught_up_since(keys[0], wall_ms) else None

    def back(self, o: int, since_wall_ms: float, start: float, kind: str) -> None:
        """Wait until the leader saw `o` caught up since `since_wall_ms`, then record the
        nemesis's window on it (start .. then)."""
        s = wait_for(
            lambda: self.caught_up(o, since_wall_ms), 180, f"{kind}: quorum-{o} caught up again"
        )
        self.down.append(Down(o, start, s.t, kind))

    def roll_done(self) -> bool:
        c = self.cluster
        sts = c.apps.read_namespaced_stateful_set("quorum", self.ns)
        rev = sts.status.update_revision
        pods = {p.metadata.name: p for p in c.core.list_namespaced_pod(self.ns).items}
        for o in range(3):
            p = pods.get(f"quorum-{o}")
            if p is None or p.metadata.deletion_timestamp is not None:
                return False
            if (p.metadata.labels or {}).get("controller-revision-hash") != rev:
                return False
        return bool(settled(c, self.ns, [0, 1, 2]))

    # --- the kinds -------------------------------------------------------------------------------
    def run(self, f: Fault, victim: int) -> None:
        fx, t0 = self.faults, time.monotonic()
        if f.kind == "operator-cut":
            fx.cut_operator()
            self.ask_roll()
            fx.kill(victim)
            time.sleep(f.hold)
            fx.heal_operator()
            self.mark(f"{f}: cut healed")
            # caught up since now: since the kill, the leader may still count a fetch sent
            # before it; after the hold the container has been restarted
            self.back(victim, time.time() * 1000, t0, f.kind)
            wait_for(self.roll_done, WORK_S, f"{f}: the roll done after the cut healed")
            return
        fx.freeze(victim)
        time.sleep(SEEN_S)
        if f.kind == "roll":
            self.ask_roll()
        else:
            self.ask_replicas(5)
        time.sleep(max(0.0, f.hold - SEEN_S))
        fx.thaw(victim)
        thawed = time.time() * 1000
        self.mark(f"{f}: thawed")
        self.back(victim, thawed, t0, f.kind)
        if f.kind == "roll":
            wait_for(self.roll_done, WORK_S, f"{f}: the roll done")
            return
        wait_for(lambda: settled(self.cluster, self.ns, [0, 1, 2, 3, 4]), WORK_S,
                 f"{f}: five voters settled")  # fmt: skip
        # 5 -> 3 asked for while a follower is down (kill -9: restarted in place)
        s = wait_for(self.watcher.latest, 10, "a DescribeQuorum answer")
        followers = sorted(k[0] for k in s.voters if k[0] != s.leader)
        second = followers[f.pick % len(followers)]
        restarts = self.cluster.restarts(self.ns, f"quorum-{second}", "node")
        t1 = time.monotonic()
        fx.kill(second)
        self.ask_replicas(3)
        self.mark(f"{f}: quorum-{second} killed, 5 -> 3 asked")
        if second < 3:  # caught up since its restart (not a fetch sent before the kill)
            wait_for(
                lambda: self.cluster.restarts(self.ns, f"quorum-{second}", "node") > restarts,
                120,
                f"{f}: quorum-{second} restarted",
            )
            self.back(second, time.time() * 1000, t1, f.kind)
        wait_for(lambda: settled(self.cluster, self.ns, [0, 1, 2]), WORK_S,
                 f"{f}: back at three voters")  # fmt: skip
        if second >= 3:  # removed: its window ends with the scale down
            self.down.append(Down(second, t1, time.monotonic(), f.kind))

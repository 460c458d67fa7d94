"""The operator's disruption invariant seen from Kubernetes: never a majority of a quorum's pods
down at once because of the operator.

Role: `PodWatch` lists a StatefulSet's pods every `interval_s` on a thread of its own and
records, per poll, which ordinals are down: missing, terminating (deletionTimestamp set) or not
Ready. `majority_down` names every stretch in which more than half of `replicas` were down
while the nemesis itself had taken none down (its windows given). quorum_watch.check cannot
see this one: a leader cut off from a majority resigns within 1.5 x the fetch timeout
(check-quorum), before its DescribeQuorum shows the followers lagging, and the pods are back
before a leaderless stretch reaches its bound.

`operator_down` is the same rule with the nemesis's faults per pod, as the nemesis runs record
them (quorum_watch.Fault: a pod, a window): more than half the pods down while at least one of
them was not taken down by the nemesis then (a pod turns Ready up to a readiness period after its
node caught up again, hence `grace_s` after each window); while the API server or the node
agents were away and a while after, only pods gone (missing, terminating) count, since the node
lifecycle controller marks every pod not Ready when it finds the node's lease stale.

Invariant: `majority_down` and `operator_down` are pure (functions of their arguments).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness import Cluster
from quorum_watch import Fault


@dataclass
class PodWatch:
    cluster: Cluster
    ns: str
    replicas: int = 3
    name: str = "quorum"
    interval_s: float = 0.2
    records: list[tuple[float, frozenset[int]]] = field(default_factory=list)
    # per poll, aligned with records: the ordinals missing or terminating (a subset of down)
    gone: list[frozenset[int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> PodWatch:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[tuple[float, frozenset[int]]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        return list(self.records)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                pods = self.cluster.core.list_namespaced_pod(self.ns).items
            except Exception:  # an API blip: nothing recorded for this poll
                continue
            up, present = set(), set()
            for p in pods:
                ready = any(
                    c.type == "Ready" and c.status == "True" for c in p.status.conditions or []
                )
                if p.metadata.deletion_timestamp is None:
                    present.add(p.metadata.name)
                    if ready:
                        up.add(p.metadata.name)
            names = [f"{self.name}-{i}" for i in range(self.replicas)]
            down = frozenset(i for i, n in enumerate(names) if n not in up)
            self.gone.append(frozenset(i for i, n in enumerate(names) if n not in present))
            self.records.append((time.monotonic(), down))


def majority_down(
    records: Sequence[tuple[float, frozenset[int]]],
    replicas: int,
    nemesis: Sequence[tuple[float, float]] = (),
) -> list[str]:
    out: list[str] = []
    start: float | None = None
    for t, down in records:
        bad = 2 * len(down) > replicas and not any(a <= t <= b for a, b in nemesis)
        if bad and start is None:
            start = t
            out.append(f"t={t:.1f}: pods {sorted(down)} of {replicas} down at once")
        elif not bad:
            start = None
    return out


def operator_down(
    records: Sequence[tuple[float, frozenset[int]]],
    replicas: int,
    taken: Sequence[Fault],
    grace_s: float = 10.0,
    *,
    gone: Sequence[frozenset[int]] | None = None,
    doubt: Sequence[tuple[float, float]] = (),
) -> list[str]:
    """Each stretch with more than half of `replicas` pods down and one of them not in a
    nemesis window (`taken`, each extended by `grace_s`), reported once. Inside a `doubt`
    window (the API server or the node agents were away: the node lifecycle controller marks
    every pod not Ready once it finds the node's lease stale, after the quorum is whole again)
    a pod counts as down only when it is gone (`gone`, aligned with `records`: missing or
    terminating), which only a deletion, the operator's or the nemesis's, makes it."""
    out: list[str] = []
    inside = False
    for i, (t, all_down) in enumerate(records):
        in_doubt = gone is not None and any(a <= t <= b for a, b in doubt)
        down = gone[i] if gone is not None and in_doubt else all_down
        nemesis = {f.node for f in taken if f.start <= t <= f.end + grace_s}
        bad = 2 * len(down) > replicas and not down <= nemesis
        if bad and not inside:
            out.append(
                f"t={t:.1f}: pods {sorted(down)} of {replicas} down at once, the nemesis's: "
                f"{sorted(nemesis & down)}"
            )
        inside = bad
    return out

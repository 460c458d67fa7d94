"""The operator nemesis: seeded random sequences of scale, kill -9, PVC+pod loss and operator
restarts on one operator-run quorum of the real node, the invariants checked throughout.

One quorum (the sample, 3 voters) takes `E2E_NEMESIS_SEQUENCES` sequences (20 in `make e2e`;
`make e2e-nemesis` runs more) of 2-3 steps from operator_nemesis.sequences(seed); each step
waits until the quorum has healed and the status agrees (settled) before the next. An operator
restart that is not a sequence's last step happens in the middle of the next one (its pod
deleted `delay` seconds into it: the new operator resumes from the status and the live quorum).
All along, quorum_watch.Watcher records DescribeQuorum every ~0.1 s and a ledger client appends.
After every sequence the recorded history is checked (quorum_watch.check): never fewer than a
majority of voters caught up unless the nemesis itself took the others down, no leaderless
stretch over 20 s, voter sets changing one member at a time, each seen committed before the
next; at the end the ledger: no acknowledged record lost. The seed is printed first;
`E2E_NEMESIS_SEED=S` re-runs it; a failure also prints its sequence and the two before it as
`E2E_NEMESIS_PLAN='...'`, which runs just those. Times per kind of step go to the e2e timings
summary.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import defaultdict
from typing import Any

import pytest
from harness import OPERATOR_NS, TIMINGS, Cluster, wait_for
from operator_nemesis import Step, parse_plan, sequences
from quorum_watch import Fault, Seen, Watcher, check
from quorums import (  # noqa: F401 - the quorum fixture
    hosts,
    kill_and_heal,
    ledger_for,
    operator_pods,
    quorum,
    settled,
    whole,
)

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("E2E_NEMESIS_SEED") or random.SystemRandom().randrange(1, 10**6))
# a schedule as a failure prints it (operator_nemesis.parse_plan) instead of a seed's
PLAN = parse_plan(os.environ["E2E_NEMESIS_PLAN"]) if os.environ.get("E2E_NEMESIS_PLAN") else None
SEQUENCES = len(PLAN) if PLAN else int(os.environ.get("E2E_NEMESIS_SEQUENCES", "20"))
STEP_TIMEOUT_S = 240
# pytest-timeout's 600 s (pyproject) is for one ordinary test; this one grows with its sequences
# (20 took 440-490 s at load 9-10)
TEST_TIMEOUT_S = 300 + 60 * SEQUENCES


class Nemesis:
    def __init__(self, cluster: Cluster, ns: str, watcher: Watcher) -> None:
        self.cluster, self.ns, self.watcher = cluster, ns, watcher
        self.replicas = 3
        self.faults: list[Fault] = []
        self.times: dict[str, list[float]] = defaultdict(list)

    def healthy(self) -> Seen:
        want = {i for i in range(self.replicas)}
        return wait_for(
            lambda: (
                (s := whole(self.watcher, self.replicas)) and {k[0] for k in s.voters} == want and s
            ),
            STEP_TIMEOUT_S,
            f"{self.replicas} voters, all caught up",
        )

    def settle(self, what: str, extra: Any = None) -> dict[str, Any]:
        def ok() -> dict[str, Any] | None:
            obj = settled(self.cluster, self.ns, list(range(self.replicas)))
            return obj if obj is not None and (extra is None or extra(obj)) else None

        return wait_for(ok, STEP_TIMEOUT_S, what)  # type: ignore[no-any-return]

    def victim(self, step: Step, s: Seen) -> int:
        if step.role == "leader":
            return s.leader
        followers = sorted(k[0] for k in s.voters if k[0] != s.leader)
        return followers[step.pick % len(followers)]

    def restart_operator(self) -> set[str]:
        """Delete the operator's pod(s); returns their names (the Deployment starts another)."""
        old = set(operator_pods(self.cluster))
        for pod in old:
            self.cluster.kubectl("delete", "pod", pod, "-n", OPERATOR_NS, "--wait=false")
        return old

    def new_operator_ready(self, old: set[str]) -> None:
        def ready() -> bool:
            pods = self.cluster.core.list_namespaced_pod(
                OPERATOR_NS, label_selector="app.kubernetes.io/name=metaquorum-operator"
            ).items
            live = [p for p in pods if p.metadata.name not in old]
            return len(pods) == len(live) == 1 and any(
                c.type == "Ready" and c.status == "True" for c in live[0].status.conditions or []
            )

        wait_for(ready, STEP_TIMEOUT_S, "a new operator pod ready")

    def do(self, step: Step, restart_after: float | None = None) -> None:
        """One step, healed and settled. `restart_after`: the operator's pod is deleted that
        many seconds into the step (an operator restart in the middle of it)."""
        before = self.healthy()
        t0 = time.monotonic()
        restarted: list[set[str]] = []
        timer = None
        if restart_after is not None:
            timer = threading.Timer(
                restart_after, lambda: restarted.append(self.restart_operator())
            )
            timer.start()
        try:
            kind = self._do(step, before, t0)
        finally:
            if timer is not None:
                timer.join()
        if restarted:
            self.new_operator_ready(restarted[0])
            kind += " + operator restart"
        self.times[kind].append(time.monotonic() - t0)

    def _do(self, step: Step, before: Seen, t0: float) -> str:
        if step.kind == "scale":
            kind = "scale up" if step.replicas > self.replicas else "scale down"
            self.replicas = step.replicas
            self.cluster.kubectl(
                "scale", "metadataquorum", "quorum", "-n", self.ns, f"--replicas={step.replicas}"
            )
            self.settle(f"{step}: voters 0..{step.replicas - 1}")
        elif step.kind == "kill":
            victim = self.victim(step, before)
            kind = f"kill -9 {step.role}"
            t0, s = kill_and_heal(self.cluster, self.ns, self.watcher, before, victim)
            self.faults.append(Fault(victim, t0, s.t, "kill"))
            self.times[f"{kind} -> healed"].append(s.t - t0)
            self.settle(f"{step}: status settled")
        elif step.kind == "lose":
            victim = self.victim(step, before)
            kind = f"PVC+pod loss ({step.role})"
            old = next(k[1] for k in before.voters if k[0] == victim)
            self.faults.append(Fault(victim, t0, float("inf"), "lose"))
            self.cluster.kubectl(
                "delete", "pvc", f"data-quorum-{victim}", "-n", self.ns, "--wait=false"
            )
            self.cluster.kubectl("delete", "pod", f"quorum-{victim}", "-n", self.ns)

            def replaced(obj: dict[str, Any]) -> bool:
                dirs = {v["id"]: v["directoryId"] for v in obj["status"]["voters"]}
                return dirs.get(victim) not in (None, old)

            self.settle(f"{step}: quorum-{victim} back with a new directory id", replaced)
            self.faults[-1] = Fault(victim, t0, time.monotonic(), "lose")
        else:
            kind = "operator restart"
            self.new_operator_ready(self.restart_operator())
        return kind


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_operator_nemesis_keeps_the_invariants(cluster: Cluster, quorum: str) -> None:  # noqa: F811
    ns = quorum
    plan = PLAN or sequences(SEED, SEQUENCES)
    texts = [" ".join(map(str, seq)) for seq in plan]
    print(
        f"\noperator nemesis: {'a given plan' if PLAN else f'seed {SEED}'}, {SEQUENCES} "
        "sequences; re-run with "
        + (f"E2E_NEMESIS_PLAN='{'; '.join(texts)}'" if PLAN else f"E2E_NEMESIS_SEED={SEED}")
        + f" E2E_NEMESIS_SEQUENCES={SEQUENCES} make e2e-nemesis"
    )
    ledger = ledger_for(ns)
    ledger.writers = 1
    ledger.start()
    watcher = Watcher(hosts(ns)).start()
    nemesis = Nemesis(cluster, ns, watcher)
    t_start = time.monotonic()
    try:
        ledger.wait_acked(20, timeout_s=60)
        for i, seq in enumerate(plan):
            label = f"{'plan' if PLAN else f'seed {SEED}'} sequence {i}: {texts[i]}"
            print(label, flush=True)
            during: float | None = None  # an operator restart due in the middle of the next step
            for j, step in enumerate(seq):
                if step.kind == "operator" and j + 1 < len(seq):
                    during = step.delay
                    continue
                try:
                    nemesis.do(step, restart_after=during)
                except AssertionError as e:
                    again = "; ".join(texts[max(0, i - 2) : i + 1])
                    raise AssertionError(
                        f"{label}: {step}: {e}\n(this sequence and the two before it: "
                        f"E2E_NEMESIS_PLAN='{again}' make e2e-nemesis)"
                    ) from None
                during = None
            violations = check(watcher.seen, nemesis.faults)
            assert not violations, f"{label}: {violations[:5]}"
            ledger.wait_acked(5, timeout_s=60)
    finally:
        seen = watcher.stop()
        ledger.stop()
    total = time.monotonic() - t_start
    result = ledger.check()
    print(f"ledger: {result}; {len(seen)} observations in {total:.0f} s")
    TIMINGS[f"operator nemesis: {SEQUENCES} sequences (s)"] = total
    for kind, ts in sorted(nemesis.times.items()):
        TIMINGS[f"nemesis {kind}: n={len(ts)} mean (s)"] = sum(ts) / len(ts)
        TIMINGS[f"nemesis {kind}: n={len(ts)} max (s)"] = max(ts)
    assert check(seen, nemesis.faults) == []
    assert PLAN or sum(len(s) for s in plan) >= 2 * SEQUENCES
    assert result.acked >= 20 * SEQUENCES

"""The Kubernetes nemesis (issue 33): seeded faults applied to the cluster under an operator-run
quorum of the real node, a client inside the cluster's network checked by porcupine, the ledger
and the operator's invariants checked throughout. Real-kubelet target only (docs/k8s-nemesis.md).

`E2E_K8S_NEMESIS_RUNS` histories (1 in `make e2e`; 10 in `make e2e-nemesis-k8s`), each a fresh
quorum and client under `E2E_K8S_NEMESIS_SCHEDULES` schedules (10) from consecutive seeds (run
r starts at `E2E_K8S_NEMESIS_SEED` + r x schedules; the seed random, printed), each of
`E2E_K8S_NEMESIS_FAULTS` faults (1 in `make e2e`, 2 in the long target) of k8s_nemesis.KINDS:
pod partitions (iptables in the pods' own namespaces), a frozen container, kill -9, the API
server stopped while a container dies, the kubelet and containerd restarted under running
pods, a node "reboot", a PVC lost while another voter is frozen. Each fault is held, healed,
and the quorum seen whole again (a leader, three voters, every one caught up since the heal)
before the next. All along: the process nemesis's Go clients (`mqnemesis run`: Produce
acks=-1 and consumer Fetch) on the pods' stable names through the cluster's DNS, and
quorum_watch.Watcher's DescribeQuorum every 0.1 s. At the end: porcupine on the whole history,
the ledger on every replica's files (from its PV) against the history, quorum_watch.check (a
majority caught up unless the nemesis took the others down, no leaderless stretch over 20 s,
one voter change at a time, each committed before the next), and after each API server outage,
reboot or lost PVC the MetadataQuorum settled on three voters agreeing with the live quorum.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest
from harness import TIMINGS, Cluster
from k8s_nemesis import KINDS, LONG_KINDS, schedule
from k8s_nemesis_run import (
    K8sNemesis,
    estimate_s,
    ledger_violations,
    log_voter_sets,
    porcupine,
    start_client,
)
from pod_watch import PodWatch
from quorum_watch import Watcher
from quorums import hosts, quorum  # noqa: F401 - the quorum fixture

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("E2E_K8S_NEMESIS_SEED") or random.SystemRandom().randrange(1, 10**6))
SCHEDULES = int(os.environ.get("E2E_K8S_NEMESIS_SCHEDULES", "10"))
# histories: each its own quorum, client, porcupine check and ledger (a campaign of many
# schedules in one history would be more than porcupine can decide in its time)
RUNS = int(os.environ.get("E2E_K8S_NEMESIS_RUNS", "1"))
# faults per schedule: 1 in make e2e (10 schedules: every kind once, in CI's budget), 2 in
# make e2e-nemesis-k8s
FAULTS = int(os.environ.get("E2E_K8S_NEMESIS_FAULTS", "1"))
LONG = os.environ.get("E2E_K8S_NEMESIS_LONG") == "1"
# the API server's outage: 30-40 s in make e2e (the 30-90 s with E2E_K8S_NEMESIS_LONG=1)
API_S = (30.0, 90.0) if LONG else (30.0, 40.0)
# the operator's own work under faults (a minute or more each): make e2e-nemesis-k8s only
KINDS_RUN = LONG_KINDS if LONG else KINDS


@pytest.mark.timeout(600 + 120 * SCHEDULES)
@pytest.mark.parametrize("run", range(RUNS), ids=lambda r: f"run{r}")
def test_k8s_nemesis_keeps_linearizability_and_the_invariants(
    run: int,
    cluster: Cluster,
    quorum: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    if cluster.containerd is None:
        pytest.skip("the Kubernetes nemesis needs the real-kubelet target (E2E_CLUSTER=local)")
    ns = quorum
    seed = SEED + run * SCHEDULES
    plan = [schedule(seed + i, FAULTS, API_S, KINDS_RUN) for i in range(SCHEDULES)]
    rerun = (
        f"seeds {seed}..{seed + SCHEDULES - 1} (re-run: E2E_K8S_NEMESIS_SEED={seed} "
        f"E2E_K8S_NEMESIS_SCHEDULES={SCHEDULES} E2E_K8S_NEMESIS_FAULTS={FAULTS}"
        + (" E2E_K8S_NEMESIS_LONG=1" if LONG else "")
        + ")"
    )
    print(
        f"\nk8s nemesis: seeds {seed}..{seed + SCHEDULES - 1}: "
        + "; ".join(" ".join(map(str, s)) for s in plan)
        + f"\nre-run: E2E_K8S_NEMESIS_SEED={seed} E2E_K8S_NEMESIS_RUNS=1 "
        f"E2E_K8S_NEMESIS_SCHEDULES={SCHEDULES} make e2e-nemesis-k8s"
    )
    watcher = Watcher(hosts(ns, 5)).start()  # 5: a scale's new members may lead
    pods = PodWatch(cluster, ns).start()
    nemesis = K8sNemesis(cluster, ns, watcher)
    # the clients run until the schedules end (SIGTERM: a clean stop, every operation in the
    # history); the duration is only a bound for a test process that died
    duration = 2 * estimate_s(plan) + 600
    client = start_client(cluster, ns, duration, seed, tmp_path)
    t_start = time.monotonic()
    try:
        for i, sched in enumerate(plan):
            print(f"schedule {seed + i}: {' '.join(map(str, sched))}", flush=True)
            for f in sched:
                try:
                    nemesis.apply(f)
                except AssertionError as e:  # a heal or a settle timed out: say where
                    raise AssertionError(f"{rerun}: schedule {seed + i}, {f}: {e}") from None
        time.sleep(5)  # calm: the last heal's appends and reads
        client.terminate()
        ops = json.loads(client.communicate(timeout=120)[0] or "{}")
    finally:
        nemesis.faults.heal_all()
        if client.poll() is None:
            client.kill()
            client.wait(10)
        seen = watcher.stop()
        pod_records = pods.stop()
        pod_gone = list(pods.gone)
    total = time.monotonic() - t_start
    verdict = porcupine(tmp_path, nemesis.faults.log)
    violations = ledger_violations(cluster, ns, tmp_path / "history.jsonl")
    heal, heal_of = max(nemesis.heals, default=(0.0, "-"))
    print(
        f"k8s nemesis: {rerun}: {SCHEDULES} schedules in {total:.0f} s, faults {nemesis.injected}, "
        f"client ops {ops}, porcupine {verdict.get('result')} "
        f"({verdict.get('operations')} ops), ledger {len(violations)} violations, "
        f"longest heal {heal:.1f} s ({heal_of}), "
        f"longest leaderless stretch {nemesis.longest_leaderless(seen)}, "
        f"watcher {nemesis.watcher_gaps(seen)}"
    )
    print(f"k8s nemesis margins: {nemesis.margins(seen)}")
    for line in nemesis.voter_changes(seen):
        print(f"k8s nemesis voter change: {line}")
    TIMINGS[f"k8s nemesis: {SCHEDULES} schedules (s)"] = total
    TIMINGS["k8s nemesis: longest heal after a fault (s)"] = max(nemesis.heal_times, default=0)
    # each message's first line (pytest's summary line in CI's output) names the seeds, the
    # check and what the nemesis was doing
    assert verdict.get("result") == "Ok", f"{rerun}: porcupine {verdict}"
    assert not violations, f"{rerun}: ledger: {len(violations)} violations: {violations[:10]}"
    invariants = nemesis.violations(seen, pod_records, log_voter_sets(cluster, ns), pod_gone)
    for v in invariants:
        print(f"k8s nemesis violation: {v}")
    assert not invariants, f"{rerun}: {len(invariants)} invariant violations: {invariants[:5]}"
    assert sum(nemesis.injected.values()) == FAULTS * SCHEDULES, (rerun, nemesis.injected)
    if len(KINDS_RUN) <= SCHEDULES:
        assert set(nemesis.injected) == set(KINDS_RUN), (rerun, nemesis.injected)
    assert verdict.get("appends_ok", 0) >= 50 * SCHEDULES, f"{rerun}: too few appends {verdict}"

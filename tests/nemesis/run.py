"""One nemesis run, end to end, and the command that re-runs a seed or a campaign.

Role: `run(seed, ...)` makes a run directory (seed, schedule, history, nemesis log, nodes'
data and logs, porcupine's verdict and visualisation, ledger, summary), builds the namespaces,
starts the quorum, runs the Go clients in the hub namespace while the nemesis follows the
seeded schedule, heals, waits until every node has the leader's HW, stops the nodes, then
checks the history with porcupine (`mqnemesis check`) and the ledger. It returns the summary;
`summary["ok"]` is false on any violation, a porcupine timeout, a finding of the nemesis or a
quorum that did not recover.
`python -m tests.nemesis.run --seed S [--duration D] [--kinds k,..] [--broken MODE]` re-runs
one seed; `--runs N` runs seeds S..S+N-1 (`make nemesis`) and prints the totals.
Invariants: the schedule is a function of the seed; the namespaces and processes are removed
whatever happens; everything needed to judge a run is in its directory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from metaquorum.protocol.types import Uuid

from tests.nemesis import ledger
from tests.nemesis.cluster import Cluster, NotConverged
from tests.nemesis.nemesis import (
    DYNAMIC_KINDS,
    EXTRA_KINDS,
    KINDS,
    SCENARIOS,
    WIPE_KINDS,
    Nemesis,
    schedule,
)
from tests.nemesis.netns import Net
from tests.nemesis.stats import availability
from tests.nemesis.tools import tools

RUNS = Path(os.environ.get("METAQUORUM_NEMESIS_DIR", Path(os.environ.get("TMPDIR", "/tmp"))))


def cli_kinds(
    given: str | None, dynamic: bool, mix: bool = False, with_wipe: bool = False
) -> tuple[str, ...]:
    """The fault kinds a CLI run uses: `--kinds` as given (exactly), else KINDS, to which a
    dynamic run (or a --mix campaign's dynamic seed) adds DYNAMIC_KINDS; --with-wipe adds
    WIPE_KINDS to a dynamic run."""
    kinds = KINDS if given is None else tuple(k for k in given.split(",") if k)
    if dynamic and (given is None or mix):  # a campaign's dynamic seeds add them
        kinds += tuple(k for k in DYNAMIC_KINDS if k not in kinds)
    if dynamic and with_wipe:
        kinds += WIPE_KINDS
    return kinds


def rerun_command(
    seed: int,
    duration_s: float,
    kinds: tuple[str, ...],
    broken: str | None,
    scenario: str | None,
    compose: bool,
    dynamic: bool,
) -> str:
    cmd = f"python -m tests.nemesis.run --seed {seed} --duration {duration_s:g}"
    if dynamic:
        cmd += " --dynamic"
    if compose:
        cmd += " --compose"
    if scenario:
        cmd += f" --scenario {scenario}"
    elif kinds != cli_kinds(None, dynamic):
        cmd += f" --kinds {','.join(kinds)}"
    if broken:
        cmd += f" --broken {broken}"
    return cmd


def run(
    seed: int,
    duration_s: float = 30.0,
    kinds: tuple[str, ...] = KINDS,
    *,
    broken: str | None = None,
    clients: int = 6,
    base: Path | None = None,
    scenario: str | None = None,
    compose: bool = False,
    dynamic: bool = False,
    converge_s: float = 60.0,
) -> dict[str, Any]:
    """One run; a `scenario` (nemesis.SCENARIOS) replaces the seeded schedule."""
    t = tools()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out = (
        base or RUNS / "metaquorum-nemesis"
    ) / f"{stamp}-seed{seed}{'-' + broken if broken else ''}"
    out.mkdir(parents=True, exist_ok=True)
    rerun = rerun_command(seed, duration_s, kinds, broken, scenario, compose, dynamic)
    faults = SCENARIOS[scenario] if scenario else schedule(seed, duration_s, kinds, compose=compose)
    print(f"nemesis: seed {seed}, {len(faults)} faults over {duration_s:g}s, dir {out}", flush=True)
    summary: dict[str, Any] = {
        "seed": seed,
        "duration_s": duration_s,
        "kinds": list(kinds),
        "dynamic": dynamic,
        "broken": broken,
        "dir": str(out),
        "rerun": rerun,
        "schedule": [f.__dict__ for f in faults],
    }
    (out / "seed").write_text(f"{seed}\n")
    net = Net(f"mq{os.getpid() % 10000}{seed % 100}", [1, 2, 3])
    net.destroy()
    cluster = Cluster(out, net, t.fiu_bin, broken=broken, dynamic=dynamic)
    nemesis = Nemesis(cluster, out / "nemesis.jsonl")
    (out / "nemesis.jsonl").touch()
    hw: dict[int, int] = {}
    client: subprocess.Popen[str] | None = None
    try:
        net.create()
        cluster.setup(str(Uuid.random()))
        for i in cluster.ids:
            cluster.start(i)
        cluster.wait_for_leader(30)
        client = subprocess.Popen(
            [
                *net.exec_prefix(None),
                *(str(t.mqnemesis), "run", "-endpoints", ",".join(cluster.endpoints())),
                *("-clients", str(clients), "-duration", f"{duration_s}s"),
                *("-seed", str(seed), "-out", str(out / "history.jsonl")),
            ],
            stdout=subprocess.PIPE,
            stderr=(out / "client.log").open("wb"),
            text=True,
        )
        start = time.monotonic()
        nemesis.run(faults, start, until=start + duration_s)
        nemesis.heal_all()
        client_out, _ = client.communicate(timeout=duration_s + 60)
        summary["client_ops"] = json.loads(client_out or "{}")
        try:
            hw = cluster.wait_converged(converge_s)
        except NotConverged as e:
            summary["recovery"] = str(e)
            hw = {i: h for i, h in e.hws.items() if h > 0}
    finally:
        if client is not None and client.poll() is None:
            client.kill()  # interrupted: the clients must not outlive the run
            client.wait(10)
        try:
            nemesis.heal_all()
        except (RuntimeError, OSError) as e:
            summary["teardown"] = str(e)
        cluster.stop_all()
        net.destroy()
        if sys.exc_info()[0] is not None:  # no verdict: keep the data, free the mounts
            cluster.release_disks(keep_data=True)
    summary["faults_injected"] = nemesis.injected
    summary["findings"] = nemesis.findings
    summary["notes"] = nemesis.notes
    summary["node_starts"] = cluster.starts
    try:
        return _judge(out, summary, hw, t.mqnemesis, cluster)
    finally:
        cluster.release_disks(keep_data=not summary.get("ok", False))


def _judge(
    out: Path, summary: dict[str, Any], hw: dict[int, int], mqnemesis: Path, cluster: Cluster
) -> dict[str, Any]:
    done = subprocess.run(
        [
            *(str(mqnemesis), "check", "-history", str(out / "history.jsonl")),
            *("-faults", str(out / "nemesis.jsonl"), "-html", str(out / "porcupine.html")),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    porcupine = json.loads(done.stdout) if done.stdout.strip() else {"error": done.stderr[-500:]}
    summary["porcupine"] = porcupine
    history = ledger.load_history(out / "history.jsonl")
    # The replicas that reached the final HW (all of them unless the quorum did not recover).
    final_hw = max(hw.values(), default=0)
    replicas = {
        i: ledger.replica_records(cluster.data_dir(i)) for i, h in hw.items() if h == final_hw
    }
    summary["final_hw"] = final_hw
    summary["final_hws"] = hw
    summary["ledger"] = ledger.check(history, replicas, final_hw) if hw else ["no final HW"]
    summary["availability"] = availability(history, ledger.load_history(out / "nemesis.jsonl"))
    summary["ok"] = (
        done.returncode == 0
        and not summary["ledger"]
        and not summary["findings"]
        and "recovery" not in summary
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    verdict = "PASS" if summary["ok"] else "FAIL"
    print(
        f"nemesis: seed {summary['seed']} {verdict}: porcupine {porcupine.get('result')}, "
        f"{porcupine.get('operations')} ops, ledger {len(summary['ledger'])} violations, "
        f"faults {summary['faults_injected']}; re-run: {summary['rerun']}",
        flush=True,
    )
    return summary


def campaign_totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs, checked operations, faults by kind, failures and mean availability."""
    by_kind: dict[str, int] = {}
    for r in results:
        for k, n in r["faults_injected"].items():
            by_kind[k] = by_kind.get(k, 0) + n
    avail = [r["availability"] for r in results if r.get("availability")]

    def mean(key: str) -> float:  # over the runs that have it (a run may have no calm stretch)
        values: list[float] = [x[key] for x in avail if key in x]
        return round(sum(values) / max(1, len(values)), 1)

    return {
        "runs": len(results),
        "checked_ops": sum(r["porcupine"].get("operations", 0) for r in results),
        "acked_appends": sum(x["acked_appends"] for x in avail),
        "faults": sum(by_kind.values()),
        "faults_by_kind": by_kind,
        "failed": [
            {"seed": r["seed"], "dir": r["dir"], "rerun": r["rerun"]}
            for r in results
            if not r["ok"]
        ],
        "appends_per_s_in_faults": mean("appends_per_s_in_faults"),
        "appends_per_s_calm": mean("appends_per_s_calm"),
        "longest_write_gap_s": max((x["longest_write_gap_s"] for x in avail), default=0.0),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="a seeded nemesis run (or campaign) on real nodes")
    p.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--duration", type=float, default=30.0)
    p.add_argument(
        "--kinds",
        default=None,
        help=f"exactly these, of {','.join(KINDS + EXTRA_KINDS + DYNAMIC_KINDS + WIPE_KINDS)} "
        f"(default {','.join(KINDS)}; --dynamic adds {','.join(DYNAMIC_KINDS)})",
    )
    p.add_argument("--broken", choices=["ack-before-majority", "stale-read"], default=None)
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default=None)
    p.add_argument("--compose", action="store_true", help="process and network faults overlap")
    p.add_argument(
        "--dynamic",
        action="store_true",
        help="KIP-853: --initial-controllers, auto-join; adds 'remove'",
    )
    p.add_argument("--with-wipe", action="store_true", help="with --dynamic: add 'wipe'")
    p.add_argument("--mix", action="store_true", help="odd seeds --dynamic, even seeds static")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    results = []
    for k in range(a.runs):
        seed = a.seed + k
        dynamic = a.dynamic or (a.mix and seed % 2 == 1)
        kinds = cli_kinds(a.kinds, dynamic, a.mix, a.with_wipe)
        r = run(
            *(seed, a.duration, kinds),
            **dict(broken=a.broken, base=a.out, scenario=a.scenario, compose=a.compose),
            dynamic=dynamic,
        )
        results.append(r)  # a passing run's data went with its disks (release_disks)
    failed = [r for r in results if not r["ok"]]
    totals = campaign_totals(results)
    print(
        f"nemesis: {totals['runs']} runs, {totals['checked_ops']} checked ops, "
        f"{totals['faults']} faults {totals['faults_by_kind']}, {len(failed)} failed; "
        f"acked appends/s in faults {totals['appends_per_s_in_faults']}, "
        f"calm {totals['appends_per_s_calm']}; longest write gap {totals['longest_write_gap_s']} s"
    )
    if a.runs > 1:
        base = a.out or RUNS / "metaquorum-nemesis"
        path = base / f"campaign-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.json"
        path.write_text(json.dumps(totals, indent=1) + "\n")
        print(f"nemesis: totals in {path}")
    for r in failed:
        print(f"  FAIL seed {r['seed']}: {r['dir']}  (re-run: {r['rerun']})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

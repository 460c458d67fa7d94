"""`python -m bench` (`make bench`, `make bench-quick`): our 3-voter quorum side by side with etcd
3.6, Kafka 4.3.1's TestRaftServer and PySyncObj 0.3.17 on the same loopback and disk.

Role: run every workload of bench/workloads.py in one process, one system at a time (never two
systems loaded at once), print a progress line, write `bench/results/run-<UTC time>.json` and
the Markdown report with PNG plots beside it (bench/report.py). Each run first measures the
physical floor of one commit (bench/floor.py) in its work directory. `--quick` is the ~2-minute
smoke run; the default run takes about 18 minutes on a 2-core machine.

Invariants: every process a step starts is stopped in a `finally`, whatever fails; a failing
system is recorded as an error in the JSON and the run goes on with the next one. Nothing
asserts speed: this is a command, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench import floor, interpreter
from bench.common import REPO, Progress, goload_binary
from bench.peers.etcd import ETCD_VERSION, EtcdCluster
from bench.peers.kafka import TestRaftCluster
from bench.peers.ours import OursCluster
from bench.peers.pysyncobj_peer import PySyncObjCluster
from bench.tls import BenchTls
from bench.workloads import (
    closed_loop,
    failover_etcd,
    failover_kafka,
    failover_ours,
    goload,
    perf_rate,
)

FULL: dict[str, Any] = {
    "clients": [1, 16, 256, 1024],
    "seconds": 8.0,
    "warmup": 2.0,
    "perf_rates": [1000, 2000, 5000, 10000, 20000],  # also the saturation sweep (report.py)
    "perf_seconds": 30.0,
    "failover_rate": 1000,
    "kills": 20,
    "profile_clients": 256,
    "profile_seconds": 8.0,
    "plain_linger_variant": True,
}
QUICK: dict[str, Any] = {
    "clients": [1, 16],
    "seconds": 3.0,
    "warmup": 1.0,
    "perf_rates": [2000],
    "perf_seconds": 12.0,
    "failover_rate": 2000,
    "kills": 2,
    "profile_clients": 16,
    "profile_seconds": 3.0,
    "plain_linger_variant": False,
}
SYSTEMS = ("ours", "etcd", "kafka", "pysyncobj")
# The variant with Kafka's own linger semantics (drain only after append.linger.ms or when
# full): closed loop, and perf-test beside TestRaftServer, batching as it does.
PLAIN_LINGER = {"metaquorum.append.linger.adaptive": "false"}


def _cmd(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=30)
    except OSError:
        return "n/a"
    return (out.stdout + out.stderr).strip().splitlines()[0] if out.stdout + out.stderr else ""


def meta(mode: str) -> dict[str, Any]:
    return {
        "mode": mode,
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_at_start": os.getloadavg(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "interpreter": interpreter.describe(),
        # A run from an exported tree (git archive) names its commit in BENCH_GIT_COMMIT.
        "git": os.environ.get("BENCH_GIT_COMMIT")
        or _cmd(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]),
        "go": _cmd(["go", "version"]),
        "java": _cmd(["java", "-version"]),
        "etcd": ETCD_VERSION,
        "kafka": (REPO / "KAFKA_VERSION").read_text().strip(),
        "pysyncobj": "0.3.17",
    }


def _tls(cfg: dict[str, Any], work: Path) -> BenchTls | None:
    """--tls: a fresh PKI for each cluster of ours (bench/tls.py)."""
    return BenchTls.create(work / "pki") if cfg.get("tls") else None


def _guard(results: dict[str, Any], key: str, fn: Callable[[], Any]) -> None:
    try:
        results[key] = fn()
    except Exception as e:
        results[key] = {"error": f"{type(e).__name__}: {e}"}
        traceback.print_exc()


def run(cfg: dict[str, Any], systems: list[str], work: Path, out: Path, mode: str) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    goload_binary()  # build before the clock starts mattering
    # The physical floor of one commit (fsync p50 + loopback RTT p50), on the nodes' disk.
    measured: dict[str, Any] = {}
    _guard(measured, "floor", lambda: floor.measure(work))
    fl = measured["floor"]
    print(f"[bench] {fl['error'] if 'error' in fl else floor.describe(fl)}", file=sys.stderr)
    closed_systems = len([s for s in systems if s != "kafka"])
    closed_systems += int("ours" in systems and cfg["plain_linger_variant"])
    steps = len(cfg["clients"]) * closed_systems
    perf_systems = [s for s in systems if s in ("ours", "kafka")]
    if "ours" in systems and cfg["plain_linger_variant"]:
        perf_systems.append("ours-plain-linger")
    steps += len(cfg["perf_rates"]) * len(perf_systems)
    steps += sum(1 for s in systems if s in ("ours", "etcd", "kafka")) + ("ours" in systems)
    progress = Progress(steps)
    res: dict[str, Any] = {
        "meta": meta(mode),
        "config": cfg,
        "floor": fl,
        "closed_loop": {},
        "perf_test": {},
        "failover": {},
        "profile": None,
    }
    kw = {"seconds": cfg["seconds"], "warmup": cfg["warmup"], "work": work, "progress": progress}

    def ours_closed() -> list[dict[str, Any]]:
        c = OursCluster(work / "ours", tls=_tls(cfg, work))
        try:
            c.start()
            rows = closed_loop(c, cfg["clients"], **kw)
            res["profile"] = _profile(c, cfg, work, out)
            return rows
        finally:
            c.stop()

    def etcd_closed() -> list[dict[str, Any]]:
        c = EtcdCluster(work / "etcd")
        try:
            c.start()
            return closed_loop(c, cfg["clients"], **kw)
        finally:
            c.stop()

    def pso_closed() -> list[dict[str, Any]]:
        c = PySyncObjCluster(work / "pysyncobj")
        try:
            c.start()
            return closed_loop(c, cfg["clients"], **kw)
        finally:
            c.stop()

    def ours_plain_linger_closed() -> list[dict[str, Any]]:
        c = OursCluster(work / "ours-plain-linger", PLAIN_LINGER, tls=_tls(cfg, work))
        c.name = "ours-plain-linger"
        try:
            c.start()
            return closed_loop(c, cfg["clients"], **kw)
        finally:
            c.stop()

    closed = {"ours": ours_closed, "etcd": etcd_closed, "pysyncobj": pso_closed}
    for name in systems:
        if name in closed:
            _guard(res["closed_loop"], name, closed[name])
    if "ours" in systems and cfg["plain_linger_variant"]:
        _guard(res["closed_loop"], "ours-plain-linger", ours_plain_linger_closed)

    for name in perf_systems:
        rows: list[dict[str, Any]] = []
        res["perf_test"][name] = rows
        for rate in cfg["perf_rates"]:
            progress.advance(f"{name}: perf-test {rate}/s")
            box: dict[str, Any] = {}
            _guard(
                box,
                "r",
                partial(
                    _perf_one, name, rate, cfg=cfg, work=work, out=out, res=res, progress=progress
                ),
            )
            rows.append(box["r"])

    if "etcd" in systems:

        def etcd_failover() -> dict[str, Any]:
            progress.advance("etcd: failover")
            c = EtcdCluster(work / "etcd-failover")
            try:
                c.start()
                return failover_etcd(c, cfg["kills"], progress)
            finally:
                c.stop()

        _guard(res["failover"], "etcd_sigkill", etcd_failover)

    progress.done()
    res["meta"]["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    res["meta"]["loadavg_at_end"] = os.getloadavg()
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = out / f"run-{mode}-{stamp}.json"
    path.write_text(json.dumps(res, indent=1, default=str))
    return path


def _perf_one(
    name: str,
    rate: int,
    *,
    cfg: dict[str, Any],
    work: Path,
    out: Path,
    res: dict[str, Any],
    progress: Progress,
) -> dict[str, Any]:
    """One offered rate; at the failover rate the same cluster then takes the leader kills
    (a slow one's logs are kept in `out`, beside the report: the next run wipes `work`)."""
    started = str(res["meta"]["started_utc"]).replace("-", "").replace(":", "")
    keep = out / f"slow-failovers-{started}"
    base = work / f"{name}-perf-{rate}"
    c: OursCluster | TestRaftCluster
    if name == "kafka":
        c = TestRaftCluster(base, rate, 100)
    else:  # ours, or ours with Kafka's plain linger (the like-for-like batching of TestRaftServer)
        extra = PLAIN_LINGER if name == "ours-plain-linger" else None
        c = OursCluster(base, extra, perf_test=(rate, 100), tls=_tls(cfg, work))
        c.name = name
    try:
        c.start()
        row = perf_rate(c, rate, cfg["perf_seconds"], progress)
        if rate == cfg["failover_rate"] and name != "ours-plain-linger":
            if isinstance(c, OursCluster):
                progress.advance("ours: SIGKILL failover")
                _guard(
                    res["failover"],
                    "ours_sigkill",
                    lambda: failover_ours(c, cfg["kills"], False, progress, keep),
                )
                progress.advance("ours: SIGTERM failover")
                _guard(
                    res["failover"],
                    "ours_sigterm",
                    lambda: failover_ours(c, cfg["kills"], True, progress, keep),
                )
            else:
                progress.advance("kafka: SIGKILL failover")
                _guard(
                    res["failover"],
                    "kafka_sigkill",
                    lambda: failover_kafka(c, cfg["kills"], progress),
                )
        return row
    finally:
        c.stop()


def _profile(c: OursCluster, cfg: dict[str, Any], work: Path, out: Path) -> dict[str, Any] | None:
    from bench.peers.ours import produce_frame
    from bench.profile import record, summarize

    leader, _ = c.leader()
    pid = c.pids()[leader]
    raw = work / "profile-leader.txt"
    tpl = work / "produce.bin"
    tpl.write_bytes(produce_frame(100))
    spy = record(pid, cfg["profile_seconds"], raw)
    if spy is None:
        return None
    load = goload(
        "produce",
        c.endpoints_leader_first(),
        clients=cfg["profile_clients"],
        seconds=cfg["profile_seconds"],
        warmup=0.5,
        pids=list(c.pids().values()),
        template=tpl,
        extra_args=c.goload_args(),
    )
    spy.wait(60)
    if not raw.exists():
        return None
    out.mkdir(parents=True, exist_ok=True)
    (out / "profile-leader-collapsed.txt").write_text(raw.read_text())
    summary = summarize(raw)
    summary["clients"] = cfg["profile_clients"]
    summary["ops_per_s_while_profiled"] = load["ops_per_s"]
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="~2-minute smoke run")
    p.add_argument("--only", default=",".join(SYSTEMS), help="systems, comma-separated")
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    p.add_argument(
        "--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "metaquorum-bench"
    )
    p.add_argument("--kills", type=int, help="failover kills per system (default 20, quick 2)")
    p.add_argument("--clients", help="client counts, e.g. 1,16,256 (overrides the mode's)")
    p.add_argument("--rates", help="perf-test offered records/s, e.g. 1000,5000")
    p.add_argument("--seconds", type=float, help="measurement window per closed-loop point")
    p.add_argument("--perf-seconds", type=float, help="run time per perf-test rate")
    p.add_argument("--no-report", action="store_true")
    p.add_argument(
        "--tls",
        action="store_true",
        default=os.environ.get("BENCH_TLS", "") not in ("", "0"),
        help="ours on mutual TLS, its load generator too (bench/tls.py; also BENCH_TLS=1)",
    )
    a = p.parse_args(argv)
    systems = [s for s in a.only.split(",") if s]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        print(
            f"python -m bench: unknown system {sorted(unknown)}; use {','.join(SYSTEMS)}",
            file=sys.stderr,
        )
        return 1
    cfg = dict(QUICK if a.quick else FULL)
    if a.kills is not None:
        cfg["kills"] = a.kills
    if a.clients:
        cfg["clients"] = [int(x) for x in a.clients.split(",")]
    if a.rates:
        cfg["perf_rates"] = [int(x) for x in a.rates.split(",")]
        if cfg["failover_rate"] not in cfg["perf_rates"]:
            cfg["failover_rate"] = cfg["perf_rates"][0]
    if a.seconds:
        cfg["seconds"] = a.seconds
    if a.perf_seconds:
        cfg["perf_seconds"] = a.perf_seconds
    cfg["tls"] = a.tls
    mode = ("quick" if a.quick else "full") + ("-tls" if a.tls else "")
    t0 = time.monotonic()
    path = run(cfg, systems, a.work, a.out, mode)
    print(f"results: {path} ({time.monotonic() - t0:.0f} s)")
    if not a.no_report:
        from bench.report import write_report

        md = write_report(path)
        print(f"report: {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

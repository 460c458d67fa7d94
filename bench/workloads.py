"""The workloads of the side-by-side benchmark, one function per kind, each returning JSON-ready
dicts (no speed is asserted anywhere).

- `closed_loop`: N closed-loop clients, 100-byte writes, for ours (Produce v9), etcd (clientv3)
  and PySyncObj (in-process chains); throughput, latency p50/p99/p999 + CDF, server CPU
  core-seconds per 1,000 committed writes (and the load generator's own CPU).
- `perf_rate`: ours `metaquorum perf-test` and Kafka's TestRaftServer at the same offered
  records/s: the last printed TestRaftServer-style line, the committed rate measured from the
  leader's high watermark over the second half of the run, CPU per 1,000 records.
- `failover_*`: kill (SIGKILL) or stop (SIGTERM) the leader under load; time from the signal to
  the first commit of a newer epoch; restart the member and wait until it has rejoined.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import SLOW_FAILOVER_S, Progress, goload_binary, summarize_times
from bench.peers.etcd import EtcdCluster
from bench.peers.kafka import TestRaftCluster
from bench.peers.ours import OursCluster, produce_frame
from bench.peers.pysyncobj_peer import PySyncObjCluster


def _per_1000(cpu_s: float, ops: float) -> float:
    return cpu_s / ops * 1000 if ops > 0 else float("nan")


def goload(
    mode: str,
    endpoints: list[str],
    *,
    clients: int,
    seconds: float,
    warmup: float,
    pids: list[int],
    template: Path | None = None,
    extra_args: list[str] | None = None,
) -> dict[str, Any]:
    argv = [str(goload_binary()), "-mode", mode, "-endpoints", ",".join(endpoints)]
    argv += extra_args or []
    argv += ["-clients", str(clients), "-duration", f"{seconds}s", "-warmup", f"{warmup}s"]
    argv += ["-pids", ",".join(map(str, pids))]
    if template is not None:
        argv += ["-template", str(template)]
    out = subprocess.run(
        argv, check=False, capture_output=True, text=True, timeout=seconds + warmup + 120
    )
    if out.returncode != 0:
        raise RuntimeError(f"goload failed: {out.stderr[-500:]}")
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def closed_loop(
    system: OursCluster | EtcdCluster | PySyncObjCluster,
    clients_list: list[int],
    *,
    seconds: float,
    warmup: float,
    work: Path,
    progress: Progress,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in clients_list:
        progress.advance(f"{system.name}: {n} closed-loop clients, {seconds:.0f}s")
        if isinstance(system, PySyncObjCluster):
            r = _pysyncobj_load(system, n, seconds, warmup)
        elif isinstance(system, OursCluster):
            tpl = work / "produce.bin"
            tpl.write_bytes(produce_frame(100))
            eps = system.endpoints_leader_first()
            pids = list(system.pids().values())
            r = goload(
                "produce",
                eps,
                clients=n,
                seconds=seconds,
                warmup=warmup,
                pids=pids,
                template=tpl,
                extra_args=system.goload_args(),
            )
        else:
            eps = system.endpoints_leader_first()
            pids = [p.pid for p in system.procs.values() if p.alive()]
            r = goload("etcd", eps, clients=n, seconds=seconds, warmup=warmup, pids=pids)
        r["clients"] = n
        r["cpu_per_1000"] = _per_1000(r["server_cpu_s"], r["ops"])
        rows.append(r)
    return rows


def _pysyncobj_load(c: PySyncObjCluster, n: int, seconds: float, warmup: float) -> dict[str, Any]:
    """The load runs inside the leader; sample the members' CPU over the measurement window."""
    box: dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.update(r=c.load(n, seconds, warmup, 100)))
    t.start()
    time.sleep(warmup)
    cpu0 = c.cpu()
    time.sleep(seconds)
    cpu1 = c.cpu()
    t.join()
    r: dict[str, Any] = box["r"]
    r["server_cpu_s"] = cpu1 - cpu0
    r["client_cpu_s"] = None  # inside the leader process, included in server_cpu_s
    return r


def perf_rate(
    system: OursCluster | TestRaftCluster, rate: int, seconds: float, progress: Progress
) -> dict[str, Any]:
    """One offered rate on an already started self-loading cluster (perf-test/TestRaftServer)."""
    progress.show(f"{system.name}: perf-test {rate} records/s x 100 B, {seconds:.0f}s")
    if isinstance(system, OursCluster):
        leader, epoch = system.leader()
    else:
        leader, epoch = system.wait_leader()
    t_start = time.monotonic()
    time.sleep(seconds / 2)
    cpu0, hw0, t0 = system.cpu(), asyncio.run(system.high_watermark(leader, epoch)), time.time()
    time.sleep(max(0.0, seconds - (time.monotonic() - t_start)))
    cpu1, hw1, t1 = system.cpu(), asyncio.run(system.high_watermark(leader, epoch)), time.time()
    summary = system.last_summary(leader)
    achieved = (hw1 - hw0) / (t1 - t0) if hw0 is not None and hw1 is not None else float("nan")
    records = (hw1 - hw0) if hw0 is not None and hw1 is not None else 0
    return {
        "offered_per_s": rate,
        "achieved_per_s": achieved,
        "printed": None if summary is None else summary.__dict__,
        "cpu_per_1000": _per_1000(cpu1 - cpu0, records),
        "leader": leader,
        "epoch": epoch,
    }


def failover_ours(
    c: OursCluster, kills: int, graceful: bool, progress: Progress, keep: Path
) -> dict[str, Any]:
    """`kills` leader kills; a slow or failed failover keeps the nodes' logs in `keep` (the
    bench's output directory: the work directory is wiped by the next run)."""
    what = "SIGTERM" if graceful else "SIGKILL"
    times: list[float] = []
    failures = 0
    slow: list[dict[str, Any]] = []
    for k in range(kills):
        progress.show(f"ours: {what} of the leader {k + 1}/{kills}")
        leader, epoch = c.leader()
        time.sleep(0.5)  # under load for a moment in this epoch
        marks = {i: n.log_path.stat().st_size for i, n in c.quorum.nodes.items()}
        t = c.terminate(leader) if graceful else c.kill(leader)
        done = asyncio.run(c.wait_new_epoch_commit(epoch, leader))
        if done is None:
            failures += 1
        else:
            times.append((done - t) * 1000)
        if done is None or done - t > SLOW_FAILOVER_S:
            slow.append(_keep_logs(c, marks, keep / f"{what.lower()}-{k}", done, t))
        if graceful:
            c.wait_exit(leader, 15)
        c.restart(leader)
        asyncio.run(c.wait_caught_up(leader))
    return {"signal": what, "failures": failures, "slow": slow, **summarize_times(times)}


def _keep_logs(
    c: OursCluster, marks: dict[int, int], out: Path, done: float | None, t: float
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    for i, n in c.quorum.nodes.items():
        with n.log_path.open("rb") as f:
            f.seek(marks.get(i, 0))
            (out / f"node-{i}.log").write_bytes(f.read())
    return {"ms": None if done is None else round((done - t) * 1000, 1), "logs": str(out)}


def failover_kafka(c: TestRaftCluster, kills: int, progress: Progress) -> dict[str, Any]:
    times: list[float] = []
    failures = 0
    for k in range(kills):
        progress.show(f"kafka: SIGKILL of the leader {k + 1}/{kills}")
        leader, epoch = c.wait_leader()
        time.sleep(0.5)
        t = c.kill(leader)
        done = asyncio.run(c.wait_new_epoch_commit(epoch, leader))
        if done is None:
            failures += 1
            new_epoch = epoch
        else:
            times.append((done - t) * 1000)
            new_epoch = c.wait_leader(60, min_epoch=epoch)[1]
        c.restart(leader)
        c.wait_rejoined(leader, new_epoch)
    return {"signal": "SIGKILL", "failures": failures, **summarize_times(times)}


def failover_etcd(c: EtcdCluster, kills: int, progress: Progress) -> dict[str, Any]:
    """Under 16 closed-loop clients (bench/goload, clientv3); the end point is read from the
    survivors' own status (`EtcdCluster.wait_new_term_commit`), as for ours and Kafka."""
    argv = [str(goload_binary()), "-mode", "etcd", "-endpoints", ",".join(c.endpoints())]
    argv += ["-clients", "16", "-duration", "3600s", "-warmup", "0s"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times: list[float] = []
    failures = 0
    try:
        time.sleep(1.0)
        for k in range(kills):
            progress.show(f"etcd: SIGKILL of the leader {k + 1}/{kills}")
            leader, term = c.leader()
            time.sleep(0.5)
            t = c.kill(leader)
            done = asyncio.run(c.wait_new_term_commit(term, leader))
            if done is None:
                failures += 1
            else:
                times.append((done - t) * 1000)
            c.restart(leader)
            c.wait_member_up(leader)
            time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait(10)
    return {"signal": "SIGKILL", "failures": failures, **summarize_times(times)}

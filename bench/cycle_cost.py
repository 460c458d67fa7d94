"""`python -m bench.cycle_cost`: what one replication cycle costs each process (issue 28).

Role: a 3-voter `metaquorum perf-test` quorum (the leader appends at an offered rate, as Kafka's
TestRaftServer) run for a window at each offered rate; for each node, its user and system CPU
(cores) and its read and write syscalls per second over the window (`/proc/<pid>/stat`,
`/proc/<pid>/io`), and the cluster's CPU per 1,000 committed records (the leader's high
watermark over the window). A follower's read syscalls per second are about twice its
replication cycles per second (a cycle is two Fetch exchanges: the records, then the KIP-1166
high-watermark answer), so the table shows how many records a cycle carries and how much of
its cost is the kernel's. Prints one Markdown table.

Invariants: each point runs on a fresh quorum with the build on PYTHONPATH (the node processes
inherit it); `--plain-linger` runs the same with Kafka's linger semantics
(`metaquorum.append.linger.adaptive=false`); nothing here runs under `make test`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import stat_times
from bench.peers.ours import OursCluster


@dataclass(frozen=True)
class Sample:
    user_s: float
    sys_s: float
    reads: int
    writes: int


def parse_sample(stat: str, io: str) -> Sample:
    """One process's counters from the text of /proc/<pid>/stat and /proc/<pid>/io."""
    counters = dict(line.split(": ", 1) for line in io.splitlines() if ": " in line)
    return Sample(*stat_times(stat), int(counters["syscr"]), int(counters["syscw"]))


def sample(pid: int) -> Sample:
    return parse_sample(Path(f"/proc/{pid}/stat").read_text(), Path(f"/proc/{pid}/io").read_text())


def run_point(rate: int, seconds: float, plain: bool, base: Path) -> list[str]:
    extra = {"metaquorum.append.linger.adaptive": "false"} if plain else None
    c = OursCluster(base / f"cycle-{rate}-{int(plain)}", extra, perf_test=(rate, 100))
    try:
        c.start()
        leader, epoch = c.leader()
        time.sleep(3)  # past start-up
        pids = c.pids()
        before = {i: sample(p) for i, p in pids.items()}
        hw0, t0 = asyncio.run(c.high_watermark(leader, epoch)), time.monotonic()
        time.sleep(seconds)
        after = {i: sample(p) for i, p in pids.items()}
        hw1, t1 = asyncio.run(c.high_watermark(leader, epoch)), time.monotonic()
    finally:
        for nid in list(c.pids()):
            c.kill(nid)
    if hw0 is None or hw1 is None or hw1 <= hw0:
        return [f"| {rate} | {'plain' if plain else 'adaptive'} | no commits measured | | | | |"]
    dt, records = t1 - t0, hw1 - hw0
    rows, total = [], 0.0
    for i in sorted(pids):
        a, b = before[i], after[i]
        user, sys_ = (b.user_s - a.user_s) / dt, (b.sys_s - a.sys_s) / dt
        total += (user + sys_) * dt
        role = "leader" if i == leader else "follower"
        rows.append(
            f"| {rate} | {'plain' if plain else 'adaptive'} | {i} ({role}) | {user:.3f} | "
            f"{sys_:.3f} | {(b.reads - a.reads) / dt:,.0f} | {(b.writes - a.writes) / dt:,.0f} |"
        )
    rows.append(
        f"| {rate} | {'plain' if plain else 'adaptive'} | cluster: {records / dt:,.0f} records/s,"
        f" {total / records * 1000:.3f} core-s per 1,000 records | | | | |"
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.cycle_cost", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--rates", default="1000,5000", help="offered records/s, comma-separated")
    p.add_argument("--seconds", type=float, default=8.0, help="measurement window per point")
    p.add_argument("--plain-linger", action="store_true", help="also with Kafka's linger")
    a = p.parse_args(argv)
    cols = ("offered/s", "linger", "node", "user cores", "sys cores")
    print("| " + " | ".join((*cols, "read syscalls/s", "write syscalls/s")) + " |")
    print("|---:|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="mq-cycle-") as tmp:
        for rate in (int(x) for x in a.rates.split(",")):
            for plain in (False, True) if a.plain_linger else (False,):
                for row in run_point(rate, a.seconds, plain, Path(tmp)):
                    print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`python -m bench.tls_cost`: what mutual TLS on the controller listener costs (issue 20).

Role: the same 3-voter `metaquorum perf-test` quorum (the leader appends at an offered rate, as
Kafka's TestRaftServer; replication and the Fetch long-polls go over the controller listener)
run plaintext and then with mutual TLS (certificates made with `openssl`, tests/support/pki.py),
at each offered rate: the achieved commit rate (the leader's high watermark over the second half
of the window, read from /status), the commit latency percentiles perf-test prints, and the CPU
seconds of the three nodes per 1,000 records. Prints one Markdown table.

Invariants: the two variants differ only in the TLS keys of the nodes' configs; each point runs
on a fresh quorum; nothing here runs under `make test`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.peers.ours import OursCluster
from tests.support.pki import Pki, ssl_props


def _hw(c: OursCluster, leader: int) -> int:
    status = c.quorum.nodes[leader].status() or {}
    return int(status.get("high_watermark", -1))


def one(base: Path, rate: int, seconds: float, extra: dict[str, str]) -> dict[str, Any]:
    c = OursCluster(base, extra, perf_test=(rate, 100))
    try:
        c.start()
        leader, _ = c.leader()
        time.sleep(seconds / 2)
        cpu0, hw0, t0 = c.cpu(), _hw(c, leader), time.monotonic()
        time.sleep(seconds / 2)
        cpu1, hw1, t1 = c.cpu(), _hw(c, leader), time.monotonic()
        summary = c.last_summary(leader)
        records = max(hw1 - hw0, 1)
        return {
            "achieved": (hw1 - hw0) / (t1 - t0),
            "p75": summary.p75_ms if summary else float("nan"),
            "p99": summary.p99_ms if summary else float("nan"),
            "cpu_per_1000": (cpu1 - cpu0) / records * 1000,
        }
    finally:
        c.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tls_cost", description=__doc__)
    p.add_argument("--rates", default="1000,5000", help="offered records/s, comma-separated")
    p.add_argument("--seconds", type=float, default=20.0, help="run time per point")
    a = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="metaquorum-tls-cost-", dir=os.environ.get("TMPDIR")))
    pki = Pki.create(work / "pki")
    variants = {"plaintext": {}, "mutual TLS": ssl_props(pki.issue("node"), pki.ca)}
    print("| offered/s | variant | achieved/s | commit p75 | commit p99 | CPU s per 1,000 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for rate in (int(r) for r in a.rates.split(",")):
        for name, extra in variants.items():
            r = one(work / f"{rate}-{name.replace(' ', '-')}", rate, a.seconds, extra)
            print(
                f"| {rate:,} | {name} | {r['achieved']:,.0f} | {r['p75']:.1f} ms | "
                f"{r['p99']:.1f} ms | {r['cpu_per_1000']:.3f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A first throughput / commit-latency figure of a quorum: N concurrent clients, each appending
one record of `--size` bytes at a time (Produce acks=-1, answered on commit), for `--seconds`.

Prints appends/s and commit latency p50/p99 as seen by the client (send -> committed answer).
Usage: python -m metaquorum.admin.loadgen --bootstrap-controller H:P --clients 64
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from metaquorum.admin.client import parse_bootstrap
from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import Endpoint


async def run_load(
    bootstrap: list[Endpoint], clients: int, seconds: float, size: int
) -> dict[str, float]:
    latencies: list[float] = []
    value = b"x" * size
    end = time.monotonic() + seconds
    pool = [LogClient(bootstrap) for _ in range(clients)]

    async def one(c: LogClient) -> None:
        while time.monotonic() < end:
            t0 = time.perf_counter()
            await c.append([value])
            latencies.append(time.perf_counter() - t0)

    await pool[0].append([value])  # warm up: discover the leader, open the connection
    t0 = time.monotonic()
    await asyncio.gather(*(one(c) for c in pool))
    elapsed = time.monotonic() - t0
    for c in pool:
        await c.close()
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return {
        "clients": clients,
        "appends": len(latencies),
        "appends_per_s": len(latencies) / elapsed,
        "p50_ms": q[49] * 1000,
        "p99_ms": q[98] * 1000,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bootstrap-controller", required=True)
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--size", type=int, default=100)
    a = p.parse_args()
    r = asyncio.run(run_load(parse_bootstrap(a.bootstrap_controller), a.clients, a.seconds, a.size))
    print(
        f"clients={r['clients']:.0f} appends={r['appends']:.0f} "
        f"appends/s={r['appends_per_s']:.0f} p50={r['p50_ms']:.1f}ms p99={r['p99_ms']:.1f}ms"
    )


if __name__ == "__main__":
    main()

"""The one-client commit path in one process, for instruction counts (issue 28).

Role: three real `NodeRuntime`s (real TCP on loopback, fsync'd logs in a temporary directory)
on one uvloop loop, a `LogClient` appending one 100-byte record at a time (Produce acks=-1,
answered on commit) `N` times after a warm-up. Run under callgrind (`/work/tools/ir.sh`-style:
`valgrind --tool=callgrind`), the whole cluster's instructions per committed write are
`(Ir(2N) - Ir(N)) / N`: load-independent, unlike the wall-clock bench on a shared machine.

Usage: python -m bench.commit_ir N   (prints the appends done and the wall time; for a profile of
what is still interpreted: python -m cProfile -o OUT -m bench.commit_ir N)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import Endpoint
from metaquorum.runtime.config import load_config
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.runtime.node import NodeRuntime


async def run(base: Path, appends: int) -> float:
    quorum = LocalQuorum(base, 3)
    quorum.write_configs()
    quorum.format()
    runtimes = [NodeRuntime(load_config(n.config_path)) for n in quorum.nodes.values()]
    for r in runtimes:
        await r.start()
    bootstrap = [Endpoint("127.0.0.1", n.port) for n in quorum.nodes.values()]
    client = LogClient(bootstrap)
    value = b"x" * 100
    for _ in range(20):  # warm up: election, leader discovery, connections
        await client.append([value])
    t0 = time.perf_counter()
    for _ in range(appends):
        await client.append([value])
    elapsed = time.perf_counter() - t0
    await client.close()
    for r in runtimes:
        await r.server.stop()
        await r.driver.stop()
    return elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("appends", type=int)
    args = p.parse_args()
    import uvloop

    with (
        tempfile.TemporaryDirectory(prefix="commit-ir-") as tmp,
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
    ):
        elapsed = runner.run(run(Path(tmp), args.appends))
    print(f"{args.appends} appends in {elapsed:.3f}s", file=sys.stderr)


if __name__ == "__main__":
    main()

"""`metaquorum perf-test --config F --throughput N --record-size S`: a node that, while it leads,
appends N records/s of S bytes and prints commit latency and committed throughput as Kafka's
`kafka.tools.TestRaftServer` prints them (our side of the side-by-side benchmark, bench/).

Role: run one controller node exactly as `metaquorum server start` does (same config, storage,
listener, HTTP status) plus a workload generator on top of the runtime's public API
(`Driver.append`). As in TestRaftServer's `RaftWorkloadGenerator`:
- the generator starts when this node leads and its epoch has a high watermark (the leader has
  caught up: Kafka's `handleClaim`), resets its throttle then, and stops on losing leadership;
- a throttle keeps the records sent at `throughput` per second since the claim (open loop: it
  does not wait for commits); records due in the same 1 ms tick go to the core as one append;
- commit latency = the time from handing a record to the core to its commit, in milliseconds;
- every 5 s (when a commit is recorded) it prints
  `Throughput (bytes/second): %.2f, Latency (ms): %.1f p75 %.1f p99 %.1f p999`, with Kafka's
  metric semantics: two 30 s samples; percentiles over 250 constant 1 ms buckets (Kafka's
  `Percentiles(1000 bytes, 250.0, CONSTANT)`: 4 bytes a bucket), a latency counted in whole
  milliseconds as Kafka's int ms, larger values in the last bucket (printed 249.0); the rate
  divides by the elapsed time of the retained samples, but never less than one full window
  (Kafka's `Rate.windowSize`).

Invariants: only committed records are counted; the node's durability is unchanged (fsync on).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metaquorum.core.states import LeaderState
from metaquorum.net.endpoint import ConfigError
from metaquorum.protocol.errors import ProtocolError
from metaquorum.runtime.config import load_config

WINDOW_MS = 30_000
SAMPLES = 2
BUCKETS = 250  # Kafka: Percentiles(sizeInBytes=1000, max=250.0): 1000 / 4 buckets
MAX_LATENCY_MS = 250.0
PRINT_INTERVAL_MS = 5000
MAX_PENDING_RECORDS = 100_000


@dataclass
class _Sample:
    start_ms: int
    bytes: int = 0
    counts: list[int] = field(default_factory=lambda: [0] * BUCKETS)


class WriteStats:
    """Kafka's `commit.latency` percentiles and `bytes.committed` rate, same windows."""

    def __init__(self) -> None:
        self.samples: list[_Sample] = []

    def _current(self, now_ms: int) -> _Sample:
        self._purge(now_ms)
        if not self.samples or now_ms - self.samples[-1].start_ms >= WINDOW_MS:
            self.samples.append(_Sample(now_ms))
            if len(self.samples) > SAMPLES:
                self.samples.pop(0)
        return self.samples[-1]

    def _purge(self, now_ms: int) -> None:
        self.samples = [s for s in self.samples if now_ms - s.start_ms < SAMPLES * WINDOW_MS]

    def record(self, latency_ms: float, nbytes: int, now_ms: int) -> None:
        s = self._current(now_ms)
        s.bytes += nbytes
        width = MAX_LATENCY_MS / BUCKETS
        s.counts[min(BUCKETS - 1, max(0, int(latency_ms / width)))] += 1

    def rate(self, now_ms: int) -> float:
        self._purge(now_ms)
        if not self.samples:
            return 0.0
        elapsed = now_ms - self.samples[0].start_ms
        full = elapsed // WINDOW_MS
        if full < SAMPLES - 1:
            elapsed += (SAMPLES - 1 - full) * WINDOW_MS
        return sum(s.bytes for s in self.samples) / (elapsed / 1000)

    def percentile(self, q: float, now_ms: int) -> float:
        self._purge(now_ms)
        total = sum(sum(s.counts) for s in self.samples)
        if total == 0:
            return float("nan")
        width = MAX_LATENCY_MS / BUCKETS
        seen = 0.0
        for b in range(BUCKETS):
            seen += sum(s.counts[b] for s in self.samples)
            if seen / total > q:
                return b * width
        return float("inf")

    def summary(self, now_ms: int) -> str:
        return (
            f"Throughput (bytes/second): {self.rate(now_ms):.2f}, Latency (ms): "
            f"{self.percentile(0.75, now_ms):.1f} p75 {self.percentile(0.99, now_ms):.1f} p99 "
            f"{self.percentile(0.999, now_ms):.1f} p999"
        )


class WorkloadGenerator:
    """Appends `throughput` records/s while this node leads; records commit latencies."""

    def __init__(self, driver: Any, throughput: int, record_size: int) -> None:
        self.driver = driver
        self.throughput = throughput
        self.payload = bytes(record_size)
        self.stats = WriteStats()
        self.last_report_ms = int(time.time() * 1000)
        self.pending = 0
        self.claimed_epoch: int | None = None
        self.claim_start = 0.0
        self.sent = 0
        self.tasks: set[asyncio.Task[None]] = set()

    def _leading_epoch(self) -> int | None:
        node = self.driver.node
        if isinstance(node.state, LeaderState) and node.high_watermark is not None:
            return int(node.epoch)
        return None

    async def run(self) -> None:
        while True:
            epoch = self._leading_epoch()
            if epoch != self.claimed_epoch:
                self.claimed_epoch = epoch
                self.claim_start = time.monotonic()
                self.sent = 0
            if epoch is None:
                await asyncio.sleep(0.01)
                continue
            due = int((time.monotonic() - self.claim_start) * self.throughput) - self.sent
            if due > 0 and self.pending < MAX_PENDING_RECORDS:
                self.sent += due
                self.pending += due
                task = asyncio.create_task(self._append(due, epoch))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            await asyncio.sleep(0.001)

    async def _append(self, n: int, epoch: int) -> None:
        t0 = time.monotonic()
        try:
            await self.driver.append((self.payload,) * n)
        except Exception:  # lost leadership: Kafka's generator drops pending appends too
            return
        finally:
            self.pending -= n
        if self.claimed_epoch != epoch:
            return
        latency_ms = (time.monotonic() - t0) * 1000
        now_ms = int(time.time() * 1000)
        for _ in range(n):
            self.stats.record(latency_ms, len(self.payload), now_ms)
        if now_ms - self.last_report_ms >= PRINT_INTERVAL_MS:
            print(self.stats.summary(now_ms), flush=True)
            self.last_report_ms = now_ms


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "perf-test",
        help="run a node whose leader appends at a fixed rate (as Kafka's TestRaftServer)",
    )
    p.add_argument(
        "--config", "-c", type=Path, required=True, help="server.properties (as server start)"
    )
    p.add_argument("--throughput", type=int, default=5000, help="records/s (default 5000)")
    p.add_argument("--record-size", type=int, default=256, help="bytes per record (default 256)")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.set_defaults(func=_perf_test)


def _perf_test(args: argparse.Namespace) -> int:
    if args.throughput <= 0 or args.record_size < 0:
        print("metaquorum perf-test: --throughput must be > 0, --record-size >= 0", file=sys.stderr)
        return 1
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        force=True,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        config = load_config(args.config)
    except ConfigError as e:
        print(f"metaquorum perf-test: {e}", file=sys.stderr)
        return 1
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    try:
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is a node extra
        pass
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(_main(config, args.throughput, args.record_size))
    except (ProtocolError, OSError) as e:
        print(f"metaquorum perf-test: {e}", file=sys.stderr)
        return 1


async def _main(config: Any, throughput: int, record_size: int) -> int:
    from metaquorum.http.app import start_configured_http
    from metaquorum.runtime.node import NodeRuntime, serve

    runtime = NodeRuntime(config)
    http = await start_configured_http(runtime)
    generator = WorkloadGenerator(runtime.driver, throughput, record_size)
    task = asyncio.create_task(generator.run())
    try:
        return await serve(runtime)
    finally:
        task.cancel()
        if http is not None:
            await http.cleanup()

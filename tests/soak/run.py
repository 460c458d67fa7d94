"""`make soak`: a 3-voter quorum on mutual TLS under a fixed offered load for hours, sampled.

Role: start `SoakQuorum` (members.py) and the open-loop load (load.py); every `--sample-every`
s append one row per node (sampler.py) and one client row (acked, failed, shed, commit p50 and
p99 of the window) to `samples.jsonl`, flushed at once; on a thread of its own a leader transfer
every `--transfer-every` s and a replacement of node `--replace-node` every `--replace-every`
s (only that node is ever replaced, so the two others live through the whole run and their
trends are fitted over hours), each logged to `events.jsonl`. At the end (or on SIGTERM /
SIGINT: the run stops early and is judged on what it has) the nodes are stopped, the report
is written (report.py) and the exit code is 1 if a check failed (trend.py), or if a chore
failed.

Invariants: the output directory holds everything a report needs at every moment (a run
killed -9 can still be reported: `python -m tests.soak.report DIR`); every node process is
stopped on every way out but SIGKILL (then `pids.json` names them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from tests.soak.load import OpenLoopLoad
from tests.soak.members import ChoreFailed, SoakQuorum
from tests.soak.report import write_report
from tests.soak.sampler import sample_node
from tests.soak.trend import failed


def percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, math.ceil(q * len(sorted_values)) - 1)]


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out
        self.stop = threading.Event()
        self.t0 = time.monotonic()
        self.chore_failures = 0

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    def _write(self, f: TextIO, row: dict[str, Any]) -> None:
        f.write(json.dumps(row) + "\n")
        f.flush()

    def chores(self, quorum: SoakQuorum, events: TextIO, lock: threading.Lock) -> None:
        a = self.args
        next_transfer, next_replace = a.transfer_every, a.replace_every
        while not self.stop.wait(1.0):
            t = self.now()
            kind = None
            if t >= next_replace:
                kind, next_replace = "replace", next_replace + a.replace_every
            elif t >= next_transfer:
                kind, next_transfer = "transfer", next_transfer + a.transfer_every
            if kind is None:
                continue
            try:
                if kind == "replace":
                    detail = quorum.replace(a.replace_node)
                else:
                    detail = quorum.transfer_leadership()
                row = {"t": t, "kind": kind, **detail}
            except (ChoreFailed, TimeoutError, OSError) as e:
                self.chore_failures += 1
                row = {"t": t, "kind": "chore-failed", "chore": kind, "error": str(e)}
            with lock:
                self._write(events, row)
            print(json.dumps(row), flush=True)

    def run(self) -> int:
        a = self.args
        if (self.out / "samples.jsonl").exists():
            print(f"{self.out} holds an earlier run: give a new --out (SOAK_OUT=...)")
            return 2
        self.out.mkdir(parents=True, exist_ok=True)
        config = {
            "seconds": a.seconds,
            "rate": a.rate,
            "sample_every": a.sample_every,
            "transfer_every": a.transfer_every,
            "replace_every": a.replace_every,
            "replace_node": a.replace_node,
            "segment_bytes": a.segment_bytes,
            "snapshot_bytes": a.snapshot_bytes,
            "command": shlex.join(["python", "-m", "tests.soak.run", *sys.argv[1:]]),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (self.out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
        if a.memtrace is not None:
            enable_memtrace(a.memtrace, a.memtrace_frames)
        quorum = SoakQuorum(
            self.out / "cluster", segment_bytes=a.segment_bytes, snapshot_bytes=a.snapshot_bytes
        )
        load = OpenLoopLoad(quorum.endpoints, rate=a.rate, tls=quorum.tls.client)
        lock = threading.Lock()
        with (
            (self.out / "samples.jsonl").open("a") as samples,
            (self.out / "events.jsonl").open("a") as events,
        ):
            try:
                quorum.start()
                quorum.write_pids(self.out / "pids.json")
                self.t0 = time.monotonic()
                load.start()
                chores = threading.Thread(
                    target=self.chores, args=(quorum, events, lock), daemon=True
                )
                chores.start()
                tick = 0
                while not self.stop.is_set() and self.now() < a.seconds:
                    tick += 1
                    self.stop.wait(max(0.0, self.t0 + tick * a.sample_every - time.monotonic()))
                    self._sample(quorum, load, samples)
                    if tick % 6 == 0:
                        quorum.write_pids(self.out / "pids.json")
            finally:
                self.stop.set()
                load.stop()
                quorum.stop()
        verdicts = write_report(self.out)
        print("\n".join(v.line() for v in verdicts))
        print(f"report: {self.out / 'report.md'}")
        if self.chore_failures:
            print(f"{self.chore_failures} chore(s) failed: see {self.out / 'events.jsonl'}")
        return 1 if failed(verdicts) or self.chore_failures else 0

    def _sample(self, quorum: SoakQuorum, load: OpenLoopLoad, f: TextIO) -> None:
        t = self.now()
        for nid, node in quorum.q.nodes.items():
            row = sample_node(nid, quorum.pid(nid), node.directory, node.http_port)
            self._write(f, {"t": t, **row})
        w = load.take_window()
        lat = sorted(w.latencies_ms)
        self._write(
            f,
            {
                "t": t,
                "node": "client",
                "acked": w.acked,
                "failed": w.failed,
                "shed": w.shed,
                "p50_ms": percentile(lat, 0.50),
                "p99_ms": percentile(lat, 0.99),
                "max_ms": lat[-1] if lat else None,
            },
        )


def enable_memtrace(directory: Path, frames: int) -> None:
    """The node processes started from here dump memory statistics into `directory` (and
    tracemalloc snapshots when `frames` > 0): tests/soak/memtrace/sitecustomize.py."""
    directory.mkdir(parents=True, exist_ok=True)
    hook = str(Path(__file__).parent / "memtrace")
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = hook if not path else f"{hook}{os.pathsep}{path}"
    os.environ["METAQUORUM_SOAK_MEMTRACE"] = str(directory.resolve())
    os.environ["METAQUORUM_SOAK_MEMTRACE_FRAMES"] = str(frames)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="soak a TLS quorum under a fixed offered load")
    p.add_argument("--seconds", type=float, default=3600)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--rate", type=float, default=100.0, help="appends/s offered (open loop)")
    p.add_argument("--sample-every", type=float, default=10.0)
    p.add_argument("--transfer-every", type=float, default=180.0)
    p.add_argument("--replace-every", type=float, default=900.0)
    p.add_argument("--replace-node", type=int, default=3)
    p.add_argument("--segment-bytes", type=int, default=8 << 20)
    p.add_argument("--snapshot-bytes", type=int, default=256 << 10)
    p.add_argument(
        "--memtrace",
        type=Path,
        help="diagnostics: each node dumps allocator stats and gc counts here every 120 s",
    )
    p.add_argument(
        "--memtrace-frames",
        type=int,
        default=0,
        help="with --memtrace: also tracemalloc snapshots with this many frames (slows nodes)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    soak = Soak(parse(argv))

    def stop_early(signum: int, frame: object) -> None:
        print(f"signal {signum}: stopping early, judging what was sampled", flush=True)
        soak.stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop_early)
    return soak.run()


if __name__ == "__main__":
    sys.exit(main())

"""Shared pieces of the side-by-side benchmark: processes, CPU accounting, the progress line.

Role: start and stop peer processes (each in its own session so a kill reaches only it), read a
process's CPU time from /proc (user + system, all threads), build the Go load generator once
(cached by the hash of its sources), and print one progress line on stderr while a run goes.

Invariants: every process started through `Proc` is killed by `stop()`/`kill()` and waited for;
nothing here is asserted about speed (the benchmark is a command, not a test).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("METAQUORUM_CACHE", Path.home() / ".cache" / "metaquorum"))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


# A failover slower than this keeps every node's log from the kill on (workloads.failover_ours,
# listed by the report), so a rare slow election can be read afterwards; ours takes ~2.02 s.
SLOW_FAILOVER_S = 3.0


def stat_times(stat: str) -> tuple[float, float]:
    """(user, system) CPU seconds from the text of /proc/<pid>/stat (the comm may hold ") ")."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (all its threads); 0 if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    return sum(stat_times(stat))


@dataclass
class Proc:
    """One benchmark process, its log file and a CPU reading baseline."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    popen: subprocess.Popen[bytes] | None = None
    cpu_dead: float = 0.0  # CPU of earlier incarnations (restarts)
    started_at: float = field(default=0.0)

    def start(self) -> Proc:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        env = dict(os.environ, **(self.env or {}))
        self.popen = subprocess.Popen(
            self.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=self.cwd,
            start_new_session=True,
        )
        log.close()
        self.started_at = time.time()
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def cpu(self) -> float:
        live = cpu_seconds(self.pid) if self.alive() else 0.0
        return self.cpu_dead + live

    def signal(self, sig: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self) -> float:
        """SIGKILL; returns the wall-clock time of the kill."""
        if self.alive():
            self.cpu_dead += cpu_seconds(self.pid)
        t = time.time()
        self.signal(signal.SIGKILL)
        if self.popen is not None:
            self.popen.wait(10)
        return t

    def stop(self, grace_s: float = 10.0) -> None:
        if not self.alive():
            return
        assert self.popen is not None
        self.cpu_dead += cpu_seconds(self.pid)
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait(5)


class Progress:
    """One line on stderr, rewritten in place: step i/n, what runs, elapsed time."""

    def __init__(self, total_steps: int) -> None:
        self.total = total_steps
        self.step = 0
        self.t0 = time.monotonic()
        self.tty = sys.stderr.isatty()

    def advance(self, what: str) -> None:
        self.step += 1
        self.show(what)

    def show(self, what: str) -> None:
        el = int(time.monotonic() - self.t0)
        line = f"[bench {self.step}/{self.total} {el // 60}:{el % 60:02d}] {what}"
        if self.tty:
            sys.stderr.write("\r\x1b[K" + line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def done(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def goload_binary() -> Path:
    """Build bench/goload (cached under $CACHE/bench by a hash of its sources) and return it."""
    src = REPO / "bench" / "goload"
    h = hashlib.sha256()
    for name in ("main.go", "tls.go", "go.mod", "go.sum"):
        h.update((src / name).read_bytes())
    out = CACHE / "bench" / f"goload-{h.hexdigest()[:12]}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0")
    tmp = out.with_suffix(".tmp")
    subprocess.run(["go", "build", "-o", str(tmp), "."], cwd=src, env=env, check=True)
    tmp.rename(out)
    return out


def percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[i]


def summarize_times(values_ms: Sequence[float]) -> dict[str, float | int | list[float]]:
    s = sorted(values_ms)
    return {
        "n": len(s),
        "p50_ms": percentile(s, 0.50),
        "p99_ms": percentile(s, 0.99),
        "max_ms": s[-1] if s else float("nan"),
        "values_ms": [round(v, 1) for v in values_ms],
    }

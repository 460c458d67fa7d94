"""The physical floor of one commit on this machine: fsync p50 + loopback TCP round trip p50.

Role: `measure(directory)` times, at the start of every `python -m bench` run and in the run's
work directory (the disk our nodes' logs are on), (a) appending 100 bytes to a file and
`os.fsync`-ing it, as a log does (nothing pre-sized: each append grows the file), and (b) a
100-byte request and an 8-byte reply over loopback TCP between this process and an echo
process (TCP_NODELAY on both; another process, as our nodes are, so each reply costs a
process wake-up, which a thread of the same interpreter would not). The run stores the
figures under `res["floor"]` and the report sets issue 28's bar "1-client commit p50 <= 2x
the floor" against them.

Why fsync + RTT: a record of a pull-based quorum (KRaft) commits only once a majority holds it
on disk, so a commit needs at least one fsync and one network round trip (the follower's Fetch
that carries the record; in practice the leader's append, the follower's fetch-append-fsync and
its next Fetch telling the leader). fsync p50 + RTT p50 is a lower bound, not an estimate.

Invariants: cheap (a short warm-up, then at most `n` samples or `budget_s` seconds per part;
well under 3 s in all on this machine); the file it writes is removed and the socket and the echo
process are closed whatever fails; every figure is milliseconds measured with perf_counter_ns.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.common import percentile

RECORD = 100  # bytes per append and per request, as the closed-loop writes
REPLY = 8


def fsync_ms(directory: Path, n: int = 300, warmup: int = 20, budget_s: float = 1.2) -> list[float]:
    """Milliseconds of each `os.write` of 100 bytes + `os.fsync` appended to a fresh file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"floor-fsync-{os.getpid()}.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
    out: list[float] = []
    try:
        data = b"x" * RECORD
        end = time.monotonic() + budget_s
        for i in range(warmup + n):
            t0 = time.perf_counter_ns()
            os.write(fd, data)
            os.fsync(fd)
            if i >= warmup:
                out.append((time.perf_counter_ns() - t0) / 1e6)
            if time.monotonic() > end and len(out) >= 10:
                break
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return out


def _recv_exact(s: socket.socket, n: int) -> bool:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = s.recv_into(view[got:])
        if k == 0:
            return False
        got += k
    return True


# The echo peer: another process, as our nodes are (a reply then costs a wake-up of another
# process, not a hand-over between two threads of one interpreter). It prints its port, then
# answers each 100-byte request with 8 bytes until the client closes (or 5 s of silence).
_ECHO = f"""
import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1); l.settimeout(5)
print(l.getsockname()[1], flush=True)
c, _ = l.accept(); c.settimeout(5); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = bytearray({RECORD}); view = memoryview(buf)
while True:
    got = 0
    while got < {RECORD}:
        k = c.recv_into(view[got:])
        if k == 0:
            sys.exit(0)
        got += k
    c.sendall(b"r" * {REPLY})
"""


def rtt_ms(n: int = 1000, warmup: int = 100, budget_s: float = 1.0) -> list[float]:
    """Milliseconds of each 100-byte request -> 8-byte reply over loopback TCP, to another
    process."""
    echo = subprocess.Popen(
        [sys.executable, "-c", _ECHO], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    out: list[float] = []
    try:
        assert echo.stdout is not None
        port = int(echo.stdout.readline())
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            data = b"q" * RECORD
            end = time.monotonic() + budget_s
            for i in range(warmup + n):
                t0 = time.perf_counter_ns()
                c.sendall(data)
                if not _recv_exact(c, REPLY):
                    raise ConnectionError("floor: the echo process closed the connection")
                if i >= warmup:
                    out.append((time.perf_counter_ns() - t0) / 1e6)
                if time.monotonic() > end and len(out) >= 10:
                    break
    finally:
        echo.kill()
        echo.wait(5)
    return out


def summarize(fsync: Sequence[float], rtt: Sequence[float]) -> dict[str, float | int]:
    """p50/p99 of each part and the floor = fsync p50 + RTT p50 (ms)."""
    f, r = sorted(fsync), sorted(rtt)
    fsync_p50, rtt_p50 = percentile(f, 0.50), percentile(r, 0.50)
    return {
        "fsync_p50_ms": fsync_p50,
        "fsync_p99_ms": percentile(f, 0.99),
        "fsync_n": len(f),
        "rtt_p50_ms": rtt_p50,
        "rtt_p99_ms": percentile(r, 0.99),
        "rtt_n": len(r),
        "floor_ms": fsync_p50 + rtt_p50,
    }


def measure(directory: Path) -> dict[str, float | int | str]:
    """Both parts, their summary, where and how long it took."""
    t0 = time.monotonic()
    fs = fsync_ms(directory)
    rt = rtt_ms()
    res: dict[str, float | int | str] = dict(summarize(fs, rt))
    res["directory"] = str(directory)
    res["seconds"] = round(time.monotonic() - t0, 3)
    return res


def describe(f: Mapping[str, object]) -> str:
    """One line: the floor and its two parts."""
    return (
        f"floor of one commit {f['floor_ms']:.3f} ms = fsync p50 {f['fsync_p50_ms']:.3f} ms "
        f"(p99 {f['fsync_p99_ms']:.3f}, 100-byte appends) + loopback TCP RTT p50 "
        f"{f['rtt_p50_ms']:.3f} ms (p99 {f['rtt_p99_ms']:.3f})"
    )

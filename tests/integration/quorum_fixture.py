"""Shared helpers: a local quorum of real `metaquorum server start` processes on loopback."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from metaquorum.runtime.local_quorum import LocalQuorum

# Shorter timeouts than Kafka's defaults so failover tests finish quickly.
FAST = {
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.fetch.timeout.ms": "1000",
}


def wait_for(cond: object, timeout_s: float, what: str) -> None:
    """Poll `cond()` every 50 ms until it is true; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(cond) and cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def wait_for_hw_everywhere(q: LocalQuorum, hw: int, timeout_s: float = 20.0) -> None:
    """Until every node's /status reports a high watermark of at least `hw`."""
    wait_for(
        lambda: all((s or {}).get("high_watermark", -1) >= hw for s in q.statuses().values()),
        timeout_s,
        f"HW >= {hw} on every node",
    )


@contextmanager
def running_quorum(
    base: Path,
    voters: int = 3,
    extra: dict[str, str] | None = None,
    observers: int = 0,
    dynamic: bool = False,
    standalone: bool = False,
) -> Iterator[LocalQuorum]:
    q = LocalQuorum(
        base, voters, observers=observers, extra=extra, dynamic=dynamic, standalone=standalone
    )
    q.write_configs()
    q.format()
    q.start_all()
    try:
        yield q
    finally:
        q.stop_all()


def our_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run one of our subcommand modules in a fresh interpreter."""
    module = {"quorum": "metaquorum.cli.quorum_cmd", "log": "metaquorum.cli.log_cmd"}[args[0]]
    return subprocess.run(
        [sys.executable, "-m", module, *args[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )

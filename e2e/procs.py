"""Stopping what the e2e harness started, by PID, and finding the mounts it left.

Role: the shared bottom of the harness's start/stop code: controlplane.py (the control plane
and the node-side processes), containerd.py (containerd and its shims) both stop processes and
unmount their state dirs with these.

Invariants: a leaf of the e2e import graph (standard library only); a process is only ever
signalled by the PID its starter recorded (its session's group, else the PID alone), never
found by name; a PID already gone is fine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def stop_pid(pid: int, grace: float = 10.0) -> None:
    """SIGTERM the process group led by pid, wait, then SIGKILL. Missing pids are fine."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:  # not a group leader (started without a session): the pid alone
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return
        except ChildProcessError:  # not our child: poll for existence
            if _gone(pid):
                return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie. A process whose starter has exited (`make cluster`'s
    processes outlive it) is reaped by pid 1, seen here taking 2 s after the exit; waiting for
    that made each stop run to its grace period."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def mounts_under(root: Path) -> list[str]:
    """Mount points at or under root, deepest first."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mnt = line.split()[4].replace("\\040", " ")
        if mnt == str(root) or mnt.startswith(f"{root}/"):
            out.append(mnt)
    return sorted(out, key=len, reverse=True)

"""One pod's run under the kubelet stand-in: its state, and starting and stopping its process.

Role: `PodRun` is what the stand-in (kubelet.py) keeps per pod it runs: the current stage
(init containers, then the first container; stages.py), its process, restarts, probe and
readiness counters, its volumes' directories. `launch`, `kill` and `reap` act on that process
only; the fault-injection port (control.py) uses `kill` as the stand-in's loop does.

Invariants: a leaf below kubelet.py and control.py (it imports neither); a process is started
in its own session with its output appended to its stage's log file, and signalled only
through its own process group; a command that cannot start counts as an exit with 127.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import stages

log = logging.getLogger("kubelet")


@dataclass
class PodRun:
    uid: str
    namespace: str
    name: str
    ip: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    logfile: Path
    probe: dict[str, Any] | None
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    ready: bool = False
    next_probe: float = 0.0
    exited_at: float | None = None
    stopping_since: float | None = None
    reported_exit: bool = False
    liveness: dict[str, Any] | None = None
    started_at: float | None = None
    next_liveness: float = 0.0
    live_failures: int = 0
    ready_streak: int = 0
    ready_failures: int = 0
    grace: float = 30.0
    pv_dirs: dict[str, str] = field(default_factory=dict)
    # initContainers then the first container (stages.py); `stage` is the one running now.
    stages: list[stages.Stage] = field(default_factory=list)
    stage: int = 0
    log_offset: int = 0

    @property
    def initializing(self) -> bool:
        return self.stage < len(self.stages) - 1


def launch(run: PodRun) -> None:
    """Start the process; a command that cannot start counts as an exit with 127."""
    run.exited_at, run.ready, run.next_probe = None, False, 0.0
    run.started_at, run.live_failures, run.ready_streak, run.ready_failures = (
        time.monotonic(),
        0,
        0,
        0,
    )
    st = run.stages[run.stage] if run.stages else None
    argv, env, cwd, logfile = (
        (st.argv, st.env, st.cwd, st.logfile)
        if st is not None
        else (run.argv, run.env, run.cwd, run.logfile)
    )
    with open(logfile, "ab") as out:
        run.log_offset = out.tell()
        try:
            run.proc = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            out.write(f"stand-in: cannot start {argv}: {e}\n".encode())
            run.proc = None
            run.exited_at = time.monotonic()
            return
    (logfile.parent / "pid").write_text(str(run.proc.pid))
    log.info(
        "started %s/%s pid %d ip %s: %s",
        run.namespace,
        run.name,
        run.proc.pid,
        run.ip,
        " ".join(argv),
    )


def kill(run: PodRun, sig: int) -> None:
    if run.proc is not None and run.proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.proc.pid, sig)


def reap(run: PodRun, timeout: float) -> None:
    if run.proc is None:
        return
    try:
        run.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill(run, signal.SIGKILL)
        run.proc.wait(5)

"""e2e/procs.py: stop_pid on a process whose starter has exited (what `make cluster-down` meets:
the cluster's processes outlive `make cluster`). pid 1 reaps such a process some time after it
exits (here about 2 s); a zombie is stopped, so stop_pid returns at once rather than polling it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "e2e"))
from procs import stop_pid  # noqa: E402


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_stop_pid_of_an_orphan_returns_once_it_exited() -> None:
    out = subprocess.run(
        ["bash", "-c", "setsid sleep 60 >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(out.stdout)
    assert running(pid)
    t0 = time.monotonic()
    stop_pid(pid, grace=10.0)
    took = time.monotonic() - t0
    assert not running(pid)
    assert took < 1.0, f"stop_pid waited {took:.1f} s for pid 1 to reap the exited process"

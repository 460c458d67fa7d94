"""Where our leader's time goes: a py-spy profile of the leader process under closed-loop load.

Role: `py-spy record --format raw` (collapsed stacks, sampled at 250 Hz, GIL-idle samples
included as py-spy reports them) on the leader's pid while bench/goload drives it; then the
top functions by self samples and by inclusive samples, as JSON for the report. The raw
collapsed stacks are kept beside the results for flame-graph tools.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def py_spy() -> str | None:
    exe = Path(sys.executable).with_name("py-spy")
    return str(exe) if exe.exists() else shutil.which("py-spy")


def record(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes] | None:
    exe = py_spy()
    if exe is None:
        return None
    argv = [exe, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "250"]
    argv += ["--format", "raw", "--output", str(out), "--nonblocking"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _short(frame: str) -> str:
    # "func (module/path.py:123)" -> "func (path.py)"
    name, _, where = frame.partition(" (")
    file = where.rstrip(")").rsplit(":", 1)[0]
    parts = file.split("/")
    return f"{name} ({'/'.join(parts[-2:])})"


# Frames every sample passes through (entry points, the loop runner, thread bootstraps).
GENERIC = (
    "<module>",
    "_run_module_as_main",
    "_run_code",
    "Runner.run",
    "_start",
    "main (",
    "Thread._bootstrap",
    "Thread.run (",
    "BaseEventLoop.run_forever",
    "run_until_complete",
)


def summarize(raw: Path, top: int = 25) -> dict[str, Any]:
    self_counts: Counter[str] = Counter()
    incl_counts: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        count = int(n)
        frames = [_short(f) for f in stack.split(";") if f]
        if not frames:
            continue
        total += count
        self_counts[frames[-1]] += count
        for f in set(frames):
            if not f.startswith(GENERIC):
                incl_counts[f] += count
    return {
        "samples": total,
        "self": [[f, c / total * 100] for f, c in self_counts.most_common(top)] if total else [],
        "inclusive": [[f, c / total * 100] for f, c in incl_counts.most_common(top)]
        if total
        else [],
    }

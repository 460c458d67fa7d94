"""Compare the memtrace dumps of one soak node over time (see tests/soak/memtrace/).

Role: `python -m tests.soak.memdiff DIR PID [--first N] [--top K] [--key traceback|lineno]`
prints, between the PID's dump N (default: the second, after warm-up) and its last one, the
growth of RSS and of traced bytes, the K allocation sites (grouped by traceback or line) that
grew most, and the gc-tracked object types whose counts grew most. Diagnostic only.

Invariant: reads the dumps, never writes.
"""

from __future__ import annotations

import argparse
import json
import tracemalloc
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("dir", type=Path)
    p.add_argument("pid")
    p.add_argument("--first", type=int, default=1)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--key", choices=("traceback", "lineno"), default="traceback")
    a = p.parse_args(argv)
    dumps = sorted(a.dir.glob(f"{a.pid}-*.tracemalloc"))
    if len(dumps) < 2:
        print(f"{a.dir}: fewer than two dumps of pid {a.pid}")
        return 2
    first, last = dumps[min(a.first, len(dumps) - 2)], dumps[-1]
    j0 = json.loads(first.with_suffix(".json").read_text())
    j1 = json.loads(last.with_suffix(".json").read_text())
    mib = 1 << 20
    print(
        f"pid {a.pid} t {j0['t']:.0f}s -> {j1['t']:.0f}s: RSS {j0['rss'] / mib:.1f} -> "
        f"{j1['rss'] / mib:.1f} MiB, traced {j0['traced'] / mib:.1f} -> "
        f"{j1['traced'] / mib:.1f} MiB, tasks {j0['tasks']} -> {j1['tasks']}"
    )
    s0 = tracemalloc.Snapshot.load(str(first))
    s1 = tracemalloc.Snapshot.load(str(last))
    for stat in s1.compare_to(s0, a.key)[: a.top]:
        print(
            f"\n{stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks "
            f"(now {stat.size / 1024:.1f} KiB)"
        )
        frames = stat.traceback.format(limit=8 if a.key == "traceback" else 1)
        print("\n".join("    " + f for f in frames[-16:]))
    t0, t1 = j0["types"], j1["types"]
    grown = sorted(((t1[k] - t0.get(k, 0), k, t1[k]) for k in t1), reverse=True)[: a.top]
    print("\ngc-tracked objects by type (growth, now):")
    for d, k, n in grown:
        print(f"  {d:+8d} {n:8d} {k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Test-only memory diagnostics of soak nodes: allocator statistics, gc counts, tracemalloc.

Role: with this directory on PYTHONPATH and METAQUORUM_SOAK_MEMTRACE=DIR (what
`python -m tests.soak.run --memtrace DIR` sets for the nodes it starts), every
`metaquorum.cli.server_cmd` process writes, every METAQUORUM_SOAK_MEMTRACE_EVERY s (120),
DIR/<pid>-<seconds>.json: VmRSS, RssAnon, RssFile, glibc's `mallinfo2` (all arenas: bytes
taken from the system, in use, free but kept), pymalloc's arena and block counts
(`sys._debugmallocstats`), gc-tracked objects by type and the running asyncio tasks by
coroutine. With METAQUORUM_SOAK_MEMTRACE_FRAMES=N > 0 it also starts `tracemalloc` (N frames)
after METAQUORUM_SOAK_MEMTRACE_AFTER s (a warm-up) and dumps DIR/<pid>-<seconds>.tracemalloc:
`python -m tests.soak.memdiff DIR PID` compares the first and last by traceback.
So one can tell live Python objects that grow (pymalloc bytes in allocated blocks, traced
bytes) from allocator retention (arenas or glibc free bytes that grow while those stay flat)
and from memory outside Python's allocators (RSS minus both).

Invariants: nothing happens unless the variable is set, and only in node processes; the
product has no configuration that reaches this (a test directory on PYTHONPATH); tracemalloc
slows a node a lot (a traced quorum under the soak's load elects often) and costs memory of
its own, so RSS from a traced run is not the soak's; the statistics alone cost ~10 ms a dump.
"""

from __future__ import annotations

import os

_DIR = os.environ.get("METAQUORUM_SOAK_MEMTRACE")


def _start() -> None:
    import collections
    import gc
    import json
    import sys
    import threading
    import time
    import tracemalloc

    frames = int(os.environ.get("METAQUORUM_SOAK_MEMTRACE_FRAMES", "0"))
    after = float(os.environ.get("METAQUORUM_SOAK_MEMTRACE_AFTER", "0"))
    every = float(os.environ.get("METAQUORUM_SOAK_MEMTRACE_EVERY", "120"))
    t0 = time.monotonic()

    def rss() -> int:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def allocators() -> dict[str, int]:
        """glibc's mallinfo2 (all arenas) and pymalloc's arena counts."""
        import ctypes
        import tempfile

        class MallInfo2(ctypes.Structure):
            _fields_ = [
                (f, ctypes.c_size_t)
                for f in (
                    "arena",
                    "ordblks",
                    "smblks",
                    "hblks",
                    "hblkhd",
                    "usmblks",
                    "fsmblks",
                    "uordblks",
                    "fordblks",
                    "keepcost",
                )
            ]

        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        mi = libc.mallinfo2()
        out = {f"glibc_{f}": int(getattr(mi, f)) for f, _ in MallInfo2._fields_}
        with tempfile.TemporaryFile("w+") as tmp:
            saved = os.dup(2)
            os.dup2(tmp.fileno(), 2)
            try:
                sys._debugmallocstats()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            tmp.seek(0)
            for line in tmp:
                for key in (
                    "# arenas allocated total",
                    "# arenas reclaimed",
                    "# arenas highwater mark",
                    "# arenas allocated current",
                    "# bytes in allocated blocks",
                    "# bytes in available blocks",
                    "# bytes lost to pool headers",
                    "# bytes lost to quantization",
                    "# bytes lost to arena alignment",
                ):
                    if line.startswith(key):
                        out["pymalloc " + key[2:]] = int(
                            line.rsplit("=", 1)[1].replace(",", "").strip()
                        )
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:")):
                    out[line.split(":")[0]] = int(line.split()[1]) * 1024
        return out

    def dump() -> None:
        pid = os.getpid()
        name = f"{_DIR}/{pid}-{int(time.monotonic() - t0):06d}"
        if frames > 0:
            tracemalloc.take_snapshot().dump(name + ".tracemalloc")
        counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
        tasks = 0
        coros: collections.Counter[str] = collections.Counter()
        try:
            import asyncio

            loops = [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]
            running = [t for lp in loops if lp.is_running() for t in asyncio.all_tasks(lp)]
            tasks = len(running)
            coros = collections.Counter(getattr(t.get_coro(), "__qualname__", "?") for t in running)
        except Exception:  # a diagnostic, never fatal
            tasks = -1
        row = {
            "t": round(time.monotonic() - t0, 1),
            "argv": sys.argv,
            "rss": rss(),
            "traced": tracemalloc.get_traced_memory()[0],
            **allocators(),
            "tasks": tasks,
            "coros": dict(coros.most_common(20)),
            "types": dict(counts.most_common(80)),
        }
        with open(name + ".json.part", "w") as f:
            json.dump(row, f)
        os.replace(name + ".json.part", name + ".json")  # a reader never sees half of it

    def loop() -> None:
        time.sleep(2)
        if not any("server_cmd" in a for a in sys.argv):
            return
        time.sleep(max(0.0, after - 2))
        if frames > 0:
            tracemalloc.start(frames)
        while True:
            time.sleep(every - (time.monotonic() - t0) % every)
            try:
                dump()
            except Exception as e:  # a diagnostic, never fatal
                print(f"memtrace: {e}", file=sys.stderr, flush=True)

    threading.Thread(target=loop, name="memtrace", daemon=True).start()


if _DIR:
    _start()

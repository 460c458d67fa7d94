"""bench.cycle_cost reads the right /proc fields: utime/stime and syscr/syscw."""

from __future__ import annotations

import os
from pathlib import Path

from bench.common import CLK_TCK as TICKS
from bench.cycle_cost import parse_sample, sample

# A /proc/<pid>/stat line whose comm holds a ") " and spaces (the parser splits after the last ")")
STAT = "4242 (py) (x y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 7 0 9 0 0"
IO = "rchar: 10\nwchar: 20\nsyscr: 3333\nsyscw: 4444\nread_bytes: 0\nwrite_bytes: 0\n"


def test_the_fields_are_utime_stime_syscr_syscw() -> None:
    s = parse_sample(STAT, IO)
    assert (s.user_s, s.sys_s) == (250 / TICKS, 75 / TICKS)
    assert (s.reads, s.writes) == (3333, 4444)


def test_this_process_agrees_with_os_times() -> None:
    x = 0
    for i in range(3_000_000):  # some user time to read back
        x += i
    s, t = sample(os.getpid()), os.times()
    assert abs(s.user_s - t.user) <= 2 / TICKS + 0.02
    assert abs(s.sys_s - t.system) <= 2 / TICKS + 0.02
    assert s.reads > 0 and Path(f"/proc/{os.getpid()}/io").exists()

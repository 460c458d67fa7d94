"""The runtime's one clock for the core (issue 13): `now_ms()` for every event the driver hands
the core, the deadlines it sleeps until, the timestamps it stamps, and its own bounded waits.

Role: the driver takes a `Clock`; production uses `SystemClock`: the monotonic clock, anchored
once to the wall clock, so its values read as wall-clock milliseconds (DescribeQuorum's
LastFetchTimestamp / LastCaughtUpTimestamp, which tools compare with their own clock, as
Kafka's `Time.SYSTEM.milliseconds()`) while a step of the wall clock (NTP, an operator) moves
no deadline: the read lease and check-quorum must never last longer than real time (a wall
clock stepping back let a deposed leader serve stale reads; found by the nemesis tier). Tests
use `ManualClock` and drive the core's timers without waiting.
Invariants: no other time source feeds the core (latency statistics measured with
`perf_counter` are measurements, not deadlines); `SystemClock` never goes back.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    """Monotonic milliseconds that start at the wall clock's reading when created."""

    def __init__(self) -> None:
        self._anchor_ms = time.time() * 1000 - time.monotonic() * 1000

    def now_ms(self) -> int:
        return int(time.monotonic() * 1000 + self._anchor_ms)


class ManualClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock does not go back")
        self._now += ms


SYSTEM_CLOCK = SystemClock()

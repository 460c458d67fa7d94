"""The runtime's one clock for the core (issue 13): `now_ms()` for every event the driver hands
the core, the deadlines it sleeps until, the timestamps it stamps, and its own bounded waits.

Role: the driver takes a `Clock`; production uses `SystemClock` (wall-clock milliseconds, as
Kafka's `Time.SYSTEM.milliseconds()` that KafkaRaftClient reads: DescribeQuorum's
LastFetchTimestamp / LastCaughtUpTimestamp are wall-clock times the tools compare with their
own clock); tests use `ManualClock` and drive the core's timers without waiting.
Invariant: no other time source feeds the core (latency statistics measured with
`perf_counter` are measurements, not deadlines).
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    """Wall-clock milliseconds (Kafka's `Time.SYSTEM.milliseconds()`)."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)


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

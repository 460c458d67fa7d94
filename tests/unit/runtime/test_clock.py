"""The driver's one clock (issue 13): the core's events, deadlines and timestamps all come from
the injected `Clock`, so a manual clock drives the core's timers without any waiting."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from metaquorum.core.events import Poll
from metaquorum.core.states import ProspectiveState, UnattachedState
from metaquorum.runtime.clock import ManualClock, SystemClock
from metaquorum.runtime.driver import Driver

from tests.support.runtime_driver import static_quorum_driver

START = 1_700_000_000_000


def _driver(tmp_path: Path, clock: ManualClock) -> Driver:
    return static_quorum_driver(tmp_path, clock)


async def test_a_manual_clock_drives_the_core_timers(tmp_path: Path) -> None:
    clock = ManualClock(START)
    driver = _driver(tmp_path, clock)
    driver.start()
    try:
        await asyncio.sleep(0.05)
        st = driver.node.state
        assert isinstance(st, UnattachedState)
        # The election timer is on the injected clock (1-2 s after START), not on any other.
        assert START + 1000 <= st.election_deadline_ms < START + 2000
        clock.advance(2000)
        driver.post(Poll())
        await asyncio.sleep(0.05)
        st2 = driver.node.state
        assert isinstance(st2, ProspectiveState)  # timed out on the manual clock, at once
        assert START + 3000 <= st2.election_deadline_ms < START + 4000
    finally:
        await driver.stop()


def test_system_clock_is_wall_milliseconds_and_manual_clock_never_goes_back() -> None:
    import time

    assert abs(SystemClock().now_ms() - time.time() * 1000) < 1000
    clock = ManualClock(5)
    clock.advance(10)
    assert clock.now_ms() == 15
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_system_clock_reads_as_wall_time_and_ignores_wall_clock_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step of the wall clock (back or forward) moves no deadline: the read lease and
    check-quorum run on real elapsed time (the nemesis tier saw a leader whose clock stepped
    back keep its lease after it was deposed and serve stale reads)."""
    import time

    clock = SystemClock()
    assert abs(clock.now_ms() - time.time() * 1000) < 1000  # reads as wall-clock ms
    before = clock.now_ms()
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 10.0)  # the wall clock steps back 10 s
    after = clock.now_ms()
    assert before <= after < before + 1000
    monkeypatch.setattr(time, "time", lambda: real() + 10.0)  # and forward
    assert clock.now_ms() < before + 1000

"""The soak's trend checker can fail (unit tier, no processes): a planted leak of RSS, fds or
threads, a disk that is never cleaned and a drifting p99 are each caught; flat noisy series,
and a replaced member's restarts, are not."""

from __future__ import annotations

import random
from typing import Any

from tests.soak.trend import MIB, disk_verdicts, failed, judge, slope_per_hour

HOURS = 3.0
STEP = 10.0


def _rows(
    *,
    rss_leak_per_h: float = 0.0,
    fd_leak_per_h: float = 0.0,
    thread_leak_per_h: float = 0.0,
    p99_drift_per_h: float = 0.0,
    seed: int = 1,
) -> list[dict[str, Any]]:
    """Three nodes (node 3 restarted every 15 min) sampled every 10 s, with noise."""
    rnd = random.Random(seed)
    rows: list[dict[str, Any]] = []
    t = 0.0
    while t <= HOURS * 3600:
        h = t / 3600
        for nid in (1, 2, 3):
            pid = 100 + nid if nid != 3 else 300 + int(t // 900)
            age_h = h if nid != 3 else (t % 900) / 3600
            rows.append(
                {
                    "t": t,
                    "node": nid,
                    "pid": pid,
                    "up": True,
                    "rss_bytes": int((60 + rnd.gauss(0, 2) + rss_leak_per_h * age_h) * MIB),
                    "fds": int(25 + rnd.choice((0, 0, 1, 2)) + fd_leak_per_h * age_h),
                    "threads": int(8 + rnd.choice((0, 0, 0, 1)) + thread_leak_per_h * age_h),
                    "disk_bytes": int(rnd.uniform(2, 20) * MIB),
                    "snapshots": 1,
                    "largest_snapshot_bytes": 9000,
                }
            )
        rows.append(
            {"t": t, "node": "client", "p99_ms": 40 + rnd.expovariate(1 / 10) + p99_drift_per_h * h}
        )
        t += STEP
    return rows


def _failed_checks(rows: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(v.check, v.subject) for v in failed(judge(rows, HOURS * 3600, 8 << 20))}


def test_flat_noisy_series_pass_and_the_replaced_member_is_not_fitted() -> None:
    verdicts = judge(_rows(), HOURS * 3600, 8 << 20)
    assert not failed(verdicts), [v.line() for v in failed(verdicts)]
    judged = {(v.check, v.subject) for v in verdicts if v.ok is not None}
    assert ("rss_bytes", "node 1") in judged and ("rss_bytes", "node 3") not in judged
    assert ("p99 drift", "client") in judged


def test_a_planted_rss_leak_is_caught() -> None:
    assert _failed_checks(_rows(rss_leak_per_h=24)) == {
        ("rss_bytes", "node 1"),
        ("rss_bytes", "node 2"),
    }


def test_a_planted_fd_leak_and_thread_leak_are_caught() -> None:
    assert ("fds", "node 1") in _failed_checks(_rows(fd_leak_per_h=20))
    assert ("threads", "node 2") in _failed_checks(_rows(thread_leak_per_h=6))


def test_a_drifting_p99_is_caught() -> None:
    assert _failed_checks(_rows(p99_drift_per_h=30)) == {("p99 drift", "client")}


def test_a_disk_never_cleaned_is_caught() -> None:
    rows = _rows()
    for r in rows:
        if r["node"] == 2:
            r["disk_bytes"] = int(r["t"] * 5000)  # 18 MB/h, never cleaned
    assert {v.subject for v in failed(disk_verdicts(rows, 8 << 20))} == {"node 2"}


def test_a_short_run_judges_no_trend() -> None:
    rows = [r for r in _rows(rss_leak_per_h=500) if r["t"] <= 90]
    verdicts = judge(rows, 90, 8 << 20)
    assert {v.ok for v in verdicts if v.check != "disk"} == {None}


def test_slope_is_per_hour() -> None:
    assert abs(slope_per_hour([(0, 0.0), (1800, 5.0), (3600, 10.0)]) - 10.0) < 1e-9

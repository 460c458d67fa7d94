"""perf-test's TestRaftServer-style statistics against independent oracles: exact sorted-list
quantiles (within one 1 ms bucket) and Kafka's `Rate.windowSize` rule worked by hand.
Run: .venv/bin/pytest bench/tests (also part of `make unit`)."""

from __future__ import annotations

import random

import pytest
from metaquorum.cli.perf_test_cmd import WriteStats


def _exact(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


@pytest.mark.parametrize("seed", range(5))
def test_percentiles_within_one_bucket_of_exact(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.uniform(0, 200) for _ in range(5000)]
    stats = WriteStats()
    for i, v in enumerate(values):
        stats.record(v, 100, 1_000 + i)
    now = 1_000 + len(values)
    for q in (0.5, 0.75, 0.99, 0.999):
        assert abs(stats.percentile(q, now) - _exact(values, q)) <= 1.0 + 1e-9


def test_large_latencies_land_in_the_last_bucket() -> None:
    stats = WriteStats()
    for _ in range(10):
        stats.record(900.0, 1, 0)
    assert stats.percentile(0.99, 1) == pytest.approx(249.0)


def test_rate_uses_at_least_one_full_window() -> None:
    # Kafka's Rate.windowSize with 2 samples of 30 s: 10 s elapsed -> 10 + 30 = 40 s.
    stats = WriteStats()
    for t in range(0, 10_001, 1000):
        stats.record(1.0, 1000, t)
    assert stats.rate(10_000) == pytest.approx(11 * 1000 / 40.0)


def test_samples_older_than_two_windows_are_dropped() -> None:
    stats = WriteStats()
    stats.record(100.0, 5000, 0)
    stats.record(1.0, 10, 61_000)
    assert stats.percentile(0.99, 61_000) == pytest.approx(1.0)

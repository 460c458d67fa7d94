"""The report reads a run's JSON: every system's figures appear, ratios are ours/theirs, a bar
missed says NO, and failed steps are shown as errors (synthetic input, numbers chosen by hand)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.profile import summarize
from bench.report import write_report


def _row(clients: int, ops: float, p50: float, p99: float) -> dict[str, object]:
    cdf = [[p50 * (1 + i / 100), i / 100] for i in range(101)]
    return {
        "clients": clients,
        "ops_per_s": ops,
        "p50_ms": p50,
        "p99_ms": p99,
        "p999_ms": p99,
        "max_ms": p99,
        "cpu_per_1000": 1.0,
        "client_cpu_s": 0.1,
        "errors": 0,
        "cdf": cdf,
    }


def test_report_has_ratios_bars_and_errors(tmp_path: Path) -> None:
    run = {
        "meta": {"mode": "quick"},
        "closed_loop": {
            "ours": [_row(1, 100, 3.0, 5.0), _row(256, 3000, 40, 80)],
            "etcd": [_row(1, 1000, 1.0, 2.0), _row(256, 4000, 30, 60)],
            "pysyncobj": {"error": "RuntimeError: boom"},
        },
        "perf_test": {},
        "failover": {
            "ours_sigkill": {
                "n": 2,
                "failures": 0,
                "p50_ms": 2000,
                "p99_ms": 2500,
                "max_ms": 2500,
                "values_ms": [2000, 2500],
            },
            "kafka_sigkill": {
                "n": 2,
                "failures": 0,
                "p50_ms": 2100,
                "p99_ms": 3000,
                "max_ms": 3000,
                "values_ms": [2100, 3000],
            },
        },
    }
    path = tmp_path / "run-quick-x.json"
    path.write_text(json.dumps(run))
    text = write_report(path).read_text()
    assert "| ours | 256 | etcd | 0.75x |" in text  # 3000 / 4000
    assert "= 0.75x | NO |" in text
    assert "| commit p50 <= 2 ms at 1 client | 3.00 ms (1.5x the bar) | NO |" in text
    assert "ours 2,500 ms vs Kafka 3,000 ms = 0.83x | yes |" in text
    assert "error: RuntimeError: boom" in text
    assert (tmp_path / "run-quick-x-throughput.png").stat().st_size > 0


def test_profile_summary_self_and_inclusive(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text("main (a/x.py:1);f (a/y.py:2);g (a/z.py:3) 3\nmain (a/x.py:1);f (a/y.py:2) 1\n")
    s = summarize(raw)
    assert s["samples"] == 4
    assert s["self"][0] == ["g (a/z.py)", 75.0]
    incl = dict((k, v) for k, v in s["inclusive"])
    assert incl["f (a/y.py)"] == 100.0


def test_saturation_is_the_highest_rate_kept_up_with_p99_under_50ms() -> None:
    from bench.report import saturation_rate

    def row(rate: int, achieved: float, p99: float | None) -> dict[str, object]:
        return {"offered_per_s": rate, "achieved_per_s": achieved, "printed": {"p99_ms": p99}}

    rows = [row(1000, 1000, 5), row(5000, 4990, 49), row(10000, 9990, 51), row(20000, 12000, 30)]
    assert saturation_rate(rows) == 5000  # 10k misses the p99, 20k did not keep up
    assert saturation_rate([row(1000, 1000, 80), {"error": "boom"}]) is None
    assert saturation_rate([row(1000, 1000, None)]) is None

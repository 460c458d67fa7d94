"""The report reads a run's JSON: every system's figures appear, ratios are ours/theirs, a bar
missed says NO, a figure missing says n/a, and failed steps are shown as errors (synthetic
input, numbers chosen by hand); the floor of one commit (bench/floor.py) is real IO."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from bench import bars, floor
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
                "slow": [{"ms": 5494.4, "logs": "/w/slow-failover-sigkill-1"}],
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
    assert "| ours 3,000/s vs etcd 4,000/s = 0.75x | NO |" in text  # the bar is 1.2x
    assert "| ours 100/s vs etcd 1,000/s = 0.10x | NO |" in text  # 1 client, the bar is 1.0x
    assert "at 16 clients: >= 1.2x | not measured | n/a |" in text
    assert "Floor of one commit: not measured" in text
    assert "the floor (fsync p50 + loopback RTT p50) | not measured | n/a |" in text
    assert "ours 2,500 ms vs Kafka 3,000 ms = 0.833x | NO |" in text  # the bar is 0.536x
    assert "error: RuntimeError: boom" in text
    assert "Slow failovers (over 3 s)" in text
    assert "- ours_sigkill: 5,494 ms, `/w/slow-failover-sigkill-1`" in text
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
    from bench.bars import saturation_rate

    def row(rate: int, achieved: float, p99: float | None) -> dict[str, object]:
        return {"offered_per_s": rate, "achieved_per_s": achieved, "printed": {"p99_ms": p99}}

    rows = [row(1000, 1000, 5), row(5000, 4990, 49), row(10000, 9990, 51), row(20000, 12000, 30)]
    assert saturation_rate(rows) == 5000  # 10k misses the p99, 20k did not keep up
    assert saturation_rate([row(1000, 1000, 80), {"error": "boom"}]) is None
    assert saturation_rate([row(1000, 1000, None)]) is None


def _perf(rate: int, achieved: float, p99: float, cpu: float) -> dict[str, Any]:
    return {
        "offered_per_s": rate,
        "achieved_per_s": achieved,
        "printed": {"p75_ms": p99 / 2, "p99_ms": p99, "p999_ms": p99, "bytes_per_s": rate * 100},
        "cpu_per_1000": cpu,
    }


def _issue28_run() -> dict[str, Any]:
    """Every bar measurable; the 1-client, floor, CPU, saturation and failover bars met, the
    16-client bar missed (1.18x < 1.2x), no 256 clients (as a quick run)."""
    return {
        "meta": {"mode": "full"},
        "floor": {"fsync_p50_ms": 0.15, "fsync_p99_ms": 0.4, "rtt_p50_ms": 0.05, "rtt_p99_ms": 0.1},
        "closed_loop": {
            "ours": [_row(1, 1300, 0.39, 0.8), _row(16, 5000, 3.0, 5.0)],
            "etcd": [_row(1, 1232, 0.79, 1.4), _row(16, 4238, 3.5, 9.4)],
        },
        "perf_test": {
            "ours": [_perf(1000, 1000, 5, 0.30), _perf(5000, 4990, 10, 0.05)],
            "kafka": [_perf(1000, 999, 30, 0.35), _perf(5000, 5000, 60, 0.059), {"error": "x"}],
        },
        "failover": {
            "ours_sigkill": {
                "n": 20,
                "failures": 0,
                "p50_ms": 1900,
                "p99_ms": 2000,
                "max_ms": 2000,
            },
            "kafka_sigkill": {
                "n": 20,
                "failures": 0,
                "p50_ms": 2000,
                "p99_ms": 4000,
                "max_ms": 4000,
            },
        },
    }


def _oks(run: dict[str, Any]) -> list[bool | None]:
    return [b.ok for b in bars.verdicts(run)]


def test_issue28_bars_met_missed_and_not_measured() -> None:
    run = _issue28_run()
    # 1 client 1.06x, 16 clients 1.18x, 256 absent, p50 1.95x the floor, CPU 0.86x/0.85x,
    # saturation 5000 vs 1000, failover 0.5x
    assert _oks(run) == [True, False, None, True, True, True, True]
    v = bars.verdicts(run)
    assert v[2].measured == "not measured"
    assert v[3].measured == "p50 0.39 ms vs floor 0.200 ms (fsync 0.150 + RTT 0.050) = 1.95x"
    assert v[4].measured == "1000/s 0.86x, 5000/s 0.85x"
    assert v[5].measured == "ours 5,000/s vs TestRaftServer 1,000/s (offered 1,000, 5,000/s)"

    run["closed_loop"]["ours"][0]["p50_ms"] = 0.41  # 2.05x the floor
    run["perf_test"]["ours"][1]["cpu_per_1000"] = 0.06  # 1.02x Kafka's at 5000/s
    run["perf_test"]["ours"][1]["printed"]["p99_ms"] = 70  # ours saturates at 1000/s too
    run["perf_test"]["kafka"][1]["printed"]["p99_ms"] = 40  # Kafka now at 5000/s
    run["failover"]["ours_sigkill"]["p99_ms"] = 2160  # 0.540x, above 2015/3757 = 0.5363x
    assert _oks(run) == [True, False, None, False, False, False, False]

    run["failover"]["ours_sigkill"].update(p99_ms=1000, failures=1)  # a failover that never ended
    assert bars.verdicts(run)[6].ok is False
    assert "1 of our failovers did not finish" in bars.verdicts(run)[6].measured


def test_issue28_bars_not_measured_in_an_empty_or_failed_run() -> None:
    assert _oks({}) == [None] * 7
    assert all(b.measured == "not measured" for b in bars.verdicts({}))
    failed = {
        "floor": {"error": "OSError: no disk"},
        "closed_loop": {"ours": {"error": "boom"}, "etcd": [_row(1, 1000, 1.0, 2.0)]},
        "perf_test": {"ours": [{"error": "boom"}], "kafka": [_perf(1000, 1000, 5, 0.3)]},
        "failover": {"ours_sigkill": {"error": "boom"}, "kafka_sigkill": {"n": 2, "p99_ms": 9}},
    }
    assert _oks(failed) == [None] * 7
    assert bars.floor_lines(failed)[0] == "Floor of one commit: not measured (OSError: no disk)."


def test_saturation_bar_when_a_system_never_qualifies() -> None:
    run = _issue28_run()
    for r in run["perf_test"]["kafka"][:2]:
        r["printed"]["p99_ms"] = 249.0
    assert bars.verdicts(run)[5].ok is True  # Kafka: none, ours: 5000/s
    for r in run["perf_test"]["ours"]:
        r["achieved_per_s"] = r["offered_per_s"] * 0.9  # ours kept up at no rate either
    assert bars.verdicts(run)[5].ok is None
    assert "neither qualified" in bars.verdicts(run)[5].measured


def test_floor_arithmetic() -> None:
    fl = bars.floor_ms({"floor": {"fsync_p50_ms": 0.15, "rtt_p50_ms": 0.05}})
    assert fl is not None
    assert math.isclose(fl[0], 0.2) and fl[1:] == (0.15, 0.05)
    assert bars.floor_ms({"floor": {"fsync_p50_ms": 0.15}}) is None
    s = floor.summarize([3.0, 1.0, 2.0, 9.0, 1.5], [0.2, 0.1, 0.3])
    assert (s["fsync_p50_ms"], s["fsync_p99_ms"], s["fsync_n"]) == (2.0, 9.0, 5)
    assert (s["rtt_p50_ms"], s["rtt_p99_ms"], s["rtt_n"]) == (0.2, 0.3, 3)
    assert math.isclose(s["floor_ms"], 2.2)


def test_report_shows_the_floor_and_the_bars(tmp_path: Path) -> None:
    path = tmp_path / "run-full-x.json"
    path.write_text(json.dumps(_issue28_run()))
    text = write_report(path).read_text()
    assert "+ loopback TCP round trip p50 0.050 ms (p99 0.100) = **0.200 ms**." in text
    assert text.index("Floor of one commit") < text.index("## Issue 28's bars")
    assert "= 1.95x | yes |" in text
    assert "| ours 5,000/s vs etcd 4,238/s = 1.18x | NO |" in text
    assert "at 256 clients: >= 1.2x | not measured | n/a |" in text
    assert "run-full-20261122T151035Z.md: 2,015 ms vs 3,757 ms) " in text
    assert "| ours 2,000 ms vs Kafka 4,000 ms = 0.500x | yes |" in text


def test_perf_test_with_kafkas_plain_linger_is_judged_beside_the_default(tmp_path: Path) -> None:
    run = _issue28_run()
    run["perf_test"]["ours-plain-linger"] = [
        _perf(1000, 1000, 28, 0.20),  # 0.57x Kafka's CPU
        _perf(5000, 5000, 45, 0.07),  # 1.19x: a miss
    ]
    path = tmp_path / "run-full-y.json"
    path.write_text(json.dumps(run))
    text = write_report(path).read_text()
    cpu = [x for x in text.splitlines() if "adaptive=false`) perf-test vs TestRaftServer" in x]
    assert cpu == [
        "| (ours, `metaquorum.append.linger.adaptive=false`) perf-test vs TestRaftServer: CPU "
        "per record <= 1.0x (at each offered rate both ran) | 1000/s 0.57x, 5000/s 1.19x "
        "| NO (not the default) |"
    ]
    sat = [x for x in text.splitlines() if "adaptive=false`) saturation rate" in x]
    assert len(sat) == 1 and sat[0].endswith("| yes (not the default) |")
    assert "| 1000 (ours with Kafka's plain linger) | 1.00x |" in text
    # The default's bars are still the default's (ours: 0.86x and 0.85x Kafka's CPU).
    assert "| 1000/s 0.86x, 5000/s 0.85x | yes |" in text


def test_floor_measures_real_fsync_and_loopback_quickly(tmp_path: Path) -> None:
    t0 = time.monotonic()
    f = floor.measure(tmp_path)
    assert time.monotonic() - t0 < 3.0
    p50s = []
    for part in ("fsync", "rtt"):
        p50, p99, n = f[f"{part}_p50_ms"], f[f"{part}_p99_ms"], f[f"{part}_n"]
        assert isinstance(p50, float) and isinstance(p99, float) and isinstance(n, int)
        assert 0 < p50 <= p99 < 1000
        assert n >= 10
        p50s.append(p50)
    assert f["floor_ms"] == p50s[0] + p50s[1]
    assert list(tmp_path.iterdir()) == []  # the fsync file is removed
    assert "floor of one commit" in floor.describe(f)

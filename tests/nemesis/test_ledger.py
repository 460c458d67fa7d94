"""The nemesis ledger and stats on hand-made histories (pure; runs in the unit tier)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from tests.nemesis.ledger import check
from tests.nemesis.nemesis import KINDS, schedule
from tests.nemesis.stats import availability


def _op(value: str, typ: str, offset: int = -1) -> dict[str, Any]:
    return {"f": "append", "value": value, "type": typ, "offset": offset, "call": 0, "return": 1}


HISTORY = [_op("a", "ok", 1), _op("b", "info"), _op("c", "ok", 3), _op("d", "fail")]


def test_a_clean_run_passes() -> None:
    log = [(1, "a"), (2, "b"), (3, "c")]
    assert check(HISTORY, {1: log, 2: list(log), 3: [*log, (4, "x")]}, hw=4) == []


def test_lost_duplicated_diverged_and_invented_records_are_named() -> None:
    bad = check(HISTORY, {1: [(1, "a"), (2, "a"), (3, "z")], 2: [(1, "a")]}, hw=4)
    text = "\n".join(bad)
    assert "replicas 1 and 2 differ" in text
    assert "value a is in the log 2 times" in text
    assert "acknowledged append c at offset 3 lost" in text
    assert "'z', which no client appended" in text
    assert check(HISTORY, {1: [(1, "a"), (2, "d"), (3, "c")]}, hw=4) == [
        "offset 2 holds 'd', an append that was never sent"
    ]


def test_the_schedule_is_a_function_of_the_seed() -> None:
    assert schedule(5, 40) == schedule(5, 40)
    assert schedule(5, 40, compose=True) == schedule(5, 40, compose=True)
    assert {f.kind for f in schedule(5, 60)} == set(KINDS)
    for lane in (0, 1):
        faults = [f for f in schedule(5, 60, compose=True) if f.lane == lane]
        assert all(a.at_s + a.hold_s < b.at_s for a, b in itertools.pairwise(faults))


def test_availability_counts_overlapping_fault_windows_once() -> None:
    s = 1_000_000_000
    history = [
        {"f": "append", "type": "ok", "call": 0, "return": t * s // 10} for t in range(1, 100)
    ]
    faults = [{"start": 2 * s, "end": 4 * s}, {"start": 3 * s, "end": 5 * s}]
    a = availability(history, faults)
    assert a["acked_appends"] == 99 and 9 <= a["appends_per_s_in_faults"] <= 11
    assert 9 <= a["appends_per_s_calm"] <= 11


def test_availability_clips_faults_to_the_run_and_has_no_calm_rate_without_calm() -> None:
    """A fault held past the clients' last operation (a 30 s wipe, say) once left ~1e-9 s of
    calm and reported 1.2e12 appends/s in calm stretches."""
    s = 1_000_000_000
    history = [
        {"f": "append", "type": "ok", "call": 0, "return": t * s // 10} for t in range(1, 100)
    ]
    a = availability(history, [{"start": 0, "end": 20 * s}])
    assert "appends_per_s_calm" not in a and 9 <= a["appends_per_s_in_faults"] <= 11
    a = availability(history, [{"start": 5 * s, "end": 20 * s}])  # clipped at 9.9 s
    assert 9 <= a["appends_per_s_in_faults"] <= 11 and 9 <= a["appends_per_s_calm"] <= 11


def test_a_campaign_report_survives_export_between_sittings(tmp_path: Path) -> None:
    """report.py: run dirs of one sitting exported to a .jsonl, read back beside another
    sitting's run dirs, give the totals of all of them; a later run of a seed wins."""
    from tests.nemesis import report

    def summary(seed: int, ok: bool, ops: int) -> dict[str, Any]:
        return {
            "seed": seed,
            "duration_s": 60,
            "dynamic": seed % 2 == 1,
            "dir": f"d{seed}",
            "rerun": f"python -m tests.nemesis.run --seed {seed}",
            "ok": ok,
            "faults_injected": {"kill": 2, "isolate": 1},
            "availability": {"acked_appends": 10 * ops, "longest_write_gap_s": 1.5},
            "porcupine": {"result": "Ok" if ok else "Illegal", "operations": ops},
            "schedule": [{"at_s": 2.0}],
        }

    first, second = tmp_path / "first", tmp_path / "second"
    for base, seed, ok, ops in (
        (first, 1, True, 100),
        (first, 2, False, 50),
        (second, 2, True, 70),
    ):
        d = base / f"run-seed{seed}"
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps(summary(seed, ok, ops)))
    kept = tmp_path / "first.jsonl"
    assert report.main([str(first), "--export", str(kept)]) == 1  # seed 2 failed there
    assert "schedule" not in kept.read_text()
    out = tmp_path / "totals.json"
    assert report.main([str(kept), str(second), "--json", str(out)]) == 0
    totals = json.loads(out.read_text())
    assert (totals["runs"], totals["checked_ops"], totals["faults"]) == (2, 170, 6)
    assert totals["failed"] == [] and totals["acked_appends"] == 1700


def test_faults_due_after_the_clients_stopped_are_skipped(tmp_path: Path) -> None:
    """Campaign seed 1067: a lane that had waited for a voter to rejoin reached its last fault
    (node 3's disk full) after the clients had stopped; with nothing to write the node could
    not fail-stop, which the harness reported as a finding. Such faults are now skipped."""
    import time

    from tests.nemesis.nemesis import Fault, Nemesis

    class NoCluster:  # any use of the cluster fails the test
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"cluster.{name} used for a fault due after the clients")

    n = Nemesis(NoCluster(), tmp_path / "nemesis.jsonl")  # type: ignore[arg-type]
    start = time.monotonic()
    n.run([Fault(0.2, "full", "3", 1.0), Fault(0.3, "isolate", "1", 1.0, 1)], start, start + 0.1)
    assert n.injected == {} and n.findings == []
    assert sorted(n.notes) == [
        "1 fault(s) of lane 0 skipped: due after the clients stopped",
        "1 fault(s) of lane 1 skipped: due after the clients stopped",
    ]

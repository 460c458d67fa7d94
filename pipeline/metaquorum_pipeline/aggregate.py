"""A campaign's aggregates per grid cell: in Spark SQL, and the same numbers in plain Python.

Role: the numbers the report shows — time to the first leader, commit latency and unavailable
time distributions, leader changes (elections per seed), violations — per scenario, plus the
list of violating seeds with their repro lines. `spark_aggregates` runs Spark SQL over the
Parquet; `python_aggregates` computes the same dict from records in memory (the `--no-spark`
path, and the cross-check the tests make of the SQL).
Invariants: both return the same structure with the same values (percentiles are exact and
interpolated as Spark's `percentile`: position p*(n-1) between the two nearest ranks); cells are
ordered by scenario name; violations by (scenario, seed).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from metaquorum_pipeline.records import Record, as_dict

PCTS = (0.5, 0.9, 0.99, 1.0)
CDF_POINTS = tuple(i / 50 for i in range(51))  # 0, 0.02, ..., 1: the plotted distribution
SHAPE = (
    "mix",
    "voters",
    "observers",
    "election_timeout_ms",
    "fetch_timeout_ms",
    "election_backoff_max_ms",
)
MAX_LISTED_VIOLATIONS = 2000

_PCT = ", ".join(str(p) for p in PCTS)
_CDF = ", ".join(str(p) for p in CDF_POINTS)
CELL_SQL = f"""
SELECT scenario, {", ".join(f"first({c}) AS {c}" for c in SHAPE)},
  count(*) AS seeds,
  sum(CASE WHEN violations > 0 THEN 1 ELSE 0 END) AS violating_seeds,
  sum(violations) AS violations,
  sum(CASE WHEN time_to_first_leader_ms IS NULL THEN 1 ELSE 0 END) AS seeds_without_leader,
  percentile(time_to_first_leader_ms, array({_PCT})) AS first_leader_ms,
  percentile(time_to_first_leader_ms, array({_CDF})) AS first_leader_cdf,
  avg(elections) AS leader_changes_mean,
  stddev_samp(elections) AS leader_changes_sd,
  percentile(elections, array({_PCT})) AS leader_changes,
  avg(unavailable_ms) AS unavailable_ms_mean,
  stddev_samp(unavailable_ms) AS unavailable_ms_sd,
  percentile(unavailable_ms, array({_PCT})) AS unavailable_ms,
  sum(appends_committed) AS appends_committed,
  sum(appends_failed) AS appends_failed,
  sum(fsync_errors) AS fsync_errors
FROM records GROUP BY scenario
"""
LATENCY_SQL = f"""
SELECT scenario,
  percentile(latency, array({_PCT})) AS commit_latency_ms,
  percentile(latency, array({_CDF})) AS commit_latency_cdf
FROM records LATERAL VIEW explode(commit_latencies_ms) l AS latency GROUP BY scenario
"""
KINDS_SQL = """
SELECT scenario, violation_kind AS kind, count(*) AS seeds FROM records
WHERE violations > 0 GROUP BY scenario, violation_kind
"""
VIOLATIONS_SQL = f"""
SELECT scenario, seed, violation_kind AS kind, violation_detail AS detail, repro FROM records
WHERE violations > 0 ORDER BY scenario, seed LIMIT {MAX_LISTED_VIOLATIONS}
"""


def percentile(values: Sequence[float], p: float) -> float | None:
    """Spark's `percentile`: linear interpolation at position p*(n-1) of the sorted values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = p * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if lo == hi:
        return float(ordered[lo])
    return (hi - pos) * ordered[lo] + (pos - lo) * ordered[hi]


def _pcts(values: Sequence[float], points: Sequence[float]) -> list[float] | None:
    if not values:
        return None
    return [percentile(values, p) or 0.0 for p in points]


def _sd(values: Sequence[float]) -> float | None:
    """Spark's `stddev_samp`: None below two values."""
    return statistics.stdev(values) if len(values) >= 2 else None


def _finish(
    cells: list[dict[str, Any]],
    kinds: Iterable[tuple[str, str, int]],
    violations: list[dict[str, Any]],
    total_violating: int,
) -> dict[str, Any]:
    by_kind: dict[str, dict[str, int]] = defaultdict(dict)
    for scenario, kind, n in kinds:
        by_kind[scenario][kind] = n
    for cell in cells:
        cell["violation_kinds"] = dict(sorted(by_kind.get(cell["scenario"], {}).items()))
    cells.sort(key=lambda c: c["scenario"])
    return {
        "cells": cells,
        "seeds": sum(c["seeds"] for c in cells),
        "violating_seeds": total_violating,
        "violations": violations,
    }


def spark_aggregates(spark: Any, df: Any) -> dict[str, Any]:
    """Aggregate a records DataFrame with Spark SQL."""
    df.createOrReplaceTempView("records")
    cells = {r["scenario"]: r.asDict(recursive=True) for r in spark.sql(CELL_SQL).collect()}
    for r in spark.sql(LATENCY_SQL).collect():
        cells[r["scenario"]].update(r.asDict(recursive=True))
    for cell in cells.values():
        cell.setdefault("commit_latency_ms", None)
        cell.setdefault("commit_latency_cdf", None)
        cell["leader_changes_mean"] = float(cell["leader_changes_mean"])
        cell["unavailable_ms_mean"] = float(cell["unavailable_ms_mean"])
    kinds = [(r["scenario"], r["kind"], r["seeds"]) for r in spark.sql(KINDS_SQL).collect()]
    violations = [r.asDict() for r in spark.sql(VIOLATIONS_SQL).collect()]
    return _finish(list(cells.values()), kinds, violations, sum(k[2] for k in kinds))


def python_aggregates(rows: Iterable[Record]) -> dict[str, Any]:
    """The same aggregates from records in memory."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        rec = as_dict(row)
        groups[rec["scenario"]].append(rec)
    cells: list[dict[str, Any]] = []
    kinds: dict[tuple[str, str], int] = defaultdict(int)
    violations: list[dict[str, Any]] = []
    for scenario, recs in groups.items():
        first = [
            r["time_to_first_leader_ms"] for r in recs if r["time_to_first_leader_ms"] is not None
        ]
        latencies = [x for r in recs for x in r["commit_latencies_ms"]]
        elections = [r["elections"] for r in recs]
        unavailable = [r["unavailable_ms"] for r in recs]
        cell: dict[str, Any] = {"scenario": scenario}
        cell.update({c: recs[0][c] for c in SHAPE})
        cell.update(
            seeds=len(recs),
            violating_seeds=sum(1 for r in recs if r["violations"]),
            violations=sum(r["violations"] for r in recs),
            seeds_without_leader=len(recs) - len(first),
            first_leader_ms=_pcts(first, PCTS),
            first_leader_cdf=_pcts(first, CDF_POINTS),
            leader_changes_mean=sum(elections) / len(recs),
            leader_changes_sd=_sd(elections),
            leader_changes=_pcts(elections, PCTS),
            unavailable_ms_mean=sum(unavailable) / len(recs),
            unavailable_ms_sd=_sd(unavailable),
            unavailable_ms=_pcts(unavailable, PCTS),
            appends_committed=sum(r["appends_committed"] for r in recs),
            appends_failed=sum(r["appends_failed"] for r in recs),
            fsync_errors=sum(r["fsync_errors"] for r in recs),
            commit_latency_ms=_pcts(latencies, PCTS),
            commit_latency_cdf=_pcts(latencies, CDF_POINTS),
        )
        cells.append(cell)
        for r in recs:
            if r["violations"]:
                kinds[(scenario, r["violation_kind"])] += 1
                violations.append(
                    {
                        "scenario": scenario,
                        "seed": r["seed"],
                        "kind": r["violation_kind"],
                        "detail": r["violation_detail"],
                        "repro": r["repro"],
                    }
                )
    violations.sort(key=lambda v: (v["scenario"], v["seed"]))
    return _finish(
        cells,
        [(s, k, n) for (s, k), n in kinds.items()],
        violations[:MAX_LISTED_VIOLATIONS],
        len(violations),
    )

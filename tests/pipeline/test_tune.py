"""Tuning (no Spark): settings ranked by unavailable time with 95% intervals; a setting with more
leader changes than Kafka's defaults beyond the combined intervals, or with a violating seed, is
never recommended."""

from __future__ import annotations

import math

import pytest
from metaquorum_pipeline.tune import ci95, group_of, table, tune


def cell(
    election: int,
    fetch: int,
    unavailable: float,
    changes: float,
    *,
    sd: float = 100.0,
    changes_sd: float = 0.2,
    violating: int = 0,
    mix: str = "chaos",
) -> dict[str, object]:
    scenario = f"{mix}+voters=5+election.timeout.ms={election}+fetch.timeout.ms={fetch}"
    return {
        "scenario": scenario,
        "election_timeout_ms": election,
        "fetch_timeout_ms": fetch,
        "election_backoff_max_ms": 1000,
        "seeds": 100,
        "violating_seeds": violating,
        "unavailable_ms_mean": unavailable,
        "unavailable_ms_sd": sd,
        "leader_changes_mean": changes,
        "leader_changes_sd": changes_sd,
    }


def test_group_drops_only_the_timeouts() -> None:
    assert (
        group_of("chaos+voters=5+election.timeout.ms=500+fetch.timeout.ms=1000") == "chaos+voters=5"
    )
    assert group_of("crashes+election.backoff.max.ms=200+observers=1") == "crashes+observers=1"


def test_recommendation_skips_extra_leader_changes_and_violations() -> None:
    cells = [
        cell(1000, 2000, 4000, 1.9),  # Kafka's defaults: the baseline
        cell(300, 2000, 2000, 3.0),  # least unavailable, but clearly more leader changes
        cell(400, 2000, 2500, 2.0, violating=1),  # broke an invariant
        cell(500, 2000, 3000, 1.95),  # within the intervals of the baseline
        cell(2000, 2000, 6000, 1.5),
        cell(500, 1000, 100, 1.0, mix="calm"),  # a group with one setting: nothing to tune
    ]
    [g] = tune(cells)
    assert g["group"] == "chaos+voters=5"
    assert g["baseline"].endswith("election.timeout.ms=1000+fetch.timeout.ms=2000")
    assert g["recommended"].endswith("election.timeout.ms=500+fetch.timeout.ms=2000")
    rows = {r["election_timeout_ms"]: r for r in g["rows"]}
    assert [r["election_timeout_ms"] for r in g["rows"]] == [300, 400, 500, 1000, 2000]
    assert rows[300]["extra_leader_changes"] and not rows[500]["extra_leader_changes"]
    assert rows[1000]["unavailable_ms_ci"] == pytest.approx(1.96 * 100 / math.sqrt(100))
    text = table([g])
    assert "recommended chaos+voters=5+election.timeout.ms=500" in text
    assert "1 violating" in text


def test_intervals_need_two_seeds() -> None:
    assert ci95(None, 10) is None and ci95(5.0, 1) is None
    assert ci95(10.0, 4) == pytest.approx(9.8)

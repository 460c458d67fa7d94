"""Campaign specs and scenario names (no Spark): the grid expands deterministically, every cell
name parses back to its params, seed ranges split into bounded tasks and skip what is done."""

from __future__ import annotations

import pytest
from metaquorum.sim.params import MIXES, scenario_name, scenario_params
from metaquorum_pipeline import spec


def test_grid_expands_mixes_times_the_product_of_overrides() -> None:
    sp = spec.parse(
        {
            "name": "g",
            "mixes": ["calm", "chaos"],
            "seeds": {"start": 10, "count": 5},
            "grid": {"controller.quorum.election.timeout.ms": [500, 1000], "voters": [3, 5]},
        }
    )
    names = [c.scenario for c in sp.cells]
    assert names == [
        "calm+election.timeout.ms=500+voters=3",
        "calm+election.timeout.ms=500+voters=5",
        "calm+election.timeout.ms=1000+voters=3",
        "calm+election.timeout.ms=1000+voters=5",
        "chaos+election.timeout.ms=500+voters=3",
        "chaos+election.timeout.ms=500+voters=5",
        "chaos+election.timeout.ms=1000+voters=3",
        "chaos+election.timeout.ms=1000+voters=5",
    ]
    assert (sp.seed_start, sp.seed_stop, sp.total_seeds) == (10, 15, 40)
    p = scenario_params(names[-1])
    assert (p.voters, p.config.election_timeout_ms) == (5, 1000)
    assert p.mix == MIXES["chaos"].mix and p.link == MIXES["chaos"].link


def test_scenario_names_keep_the_mix_and_reject_unknown_keys() -> None:
    assert scenario_params("snapshots+fetch.timeout.ms=3000").config.snapshot_chunk_bytes == 64
    assert scenario_params("chaos") == MIXES["chaos"]
    name = scenario_name("crashes", {"controller.quorum.election.backoff.max.ms": 200})
    assert name == "crashes+election.backoff.max.ms=200"
    assert scenario_params(name).config.election_backoff_max_ms == 200
    for bad in ("nope", "chaos+bogus=1", "chaos+voters=x", "chaos+voters=0"):
        with pytest.raises(ValueError):
            scenario_params(bad)


def test_bad_specs_are_refused_with_a_reason() -> None:
    for data, words in (
        ({"mixes": ["nope"]}, "unknown mix"),
        ({"mixes": ["calm"], "grid": {"bogus": [1]}}, "unknown override"),
        ({"mixes": ["calm"], "grid": {"voters": []}}, "non-empty list"),
        ({"mixes": ["calm"], "seeds": [5, 5]}, "start < stop"),
        ({"mixes": ["calm"], "sedes": 3}, "unknown spec keys"),
    ):
        with pytest.raises(spec.SpecError, match=words):
            spec.parse(data)


def test_tasks_are_bounded_and_skip_done_seeds() -> None:
    sp = spec.parse({"mixes": ["calm", "chaos"], "seeds": [0, 10], "seeds_per_task": 4})
    assert spec.tasks(sp) == [
        ("calm", 0, 4), ("calm", 4, 8), ("calm", 8, 10),
        ("chaos", 0, 4), ("chaos", 4, 8), ("chaos", 8, 10),
    ]  # fmt: skip
    done = {"calm": set(range(10)), "chaos": {0, 1, 2, 5}}
    assert spec.tasks(sp, done) == [("chaos", 3, 5), ("chaos", 6, 10)]
    assert list(spec.ranges([7, 1, 2, 3, 9, 8])) == [(1, 4), (7, 10)]


def test_a_sample_keeps_a_seeded_subset_of_the_grid_in_order() -> None:
    data = {
        "mixes": ["calm", "chaos", "crashes"],
        "grid": {"election.timeout.ms": [300, 500, 1000, 2000], "fetch.timeout.ms": [1000, 2000]},
        "sample": {"cells": 5, "seed": 7},
    }
    full = [c.scenario for c in spec.parse({k: v for k, v in data.items() if k != "sample"}).cells]
    picked = [c.scenario for c in spec.parse(data).cells]
    assert len(full) == 24 and len(picked) == 5
    assert picked == [c for c in full if c in picked]  # grid order kept
    assert picked == [c.scenario for c in spec.parse(data).cells]  # same seed, same cells
    other = [c.scenario for c in spec.parse({**data, "sample": {"cells": 5, "seed": 8}}).cells]
    assert other != picked
    with pytest.raises(spec.SpecError, match="sample"):
        spec.parse({**data, "sample": {"cells": 0}})

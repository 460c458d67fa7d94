"""The per-seed record of a campaign: its columns, and running a task's seeds into records.

Role: the one place that says what a Parquet row holds. `run_task` is what a Spark executor
(or the `--no-spark` process pool, or a test's plain loop) calls for one partition's seed range;
it imports nothing from Spark, so the simulator's import cost is paid once per worker process.
Invariants: a record is a flat tuple in `COLUMNS` order of plain ints, strings, None and one
list of ints; it depends only on (scenario, seed), never on where or when it ran, so the same
seeds give identical records on Spark and in a plain loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from metaquorum.sim.api import SeedResult, run_scenario

# (name, Spark SQL type, nullable). `scenario` is last: it is the Parquet partition column.
COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("mix", "string", False),
    ("seed", "bigint", False),
    ("voters", "int", False),
    ("observers", "int", False),
    ("election_timeout_ms", "int", False),
    ("fetch_timeout_ms", "int", False),
    ("election_backoff_max_ms", "int", False),
    ("events", "bigint", False),
    ("elections", "int", False),
    ("time_to_first_leader_ms", "int", True),
    ("commit_latencies_ms", "array<int>", False),
    ("appends_committed", "int", False),
    ("appends_failed", "int", False),
    ("unavailable_ms", "bigint", False),
    ("committed_offsets", "int", False),
    ("fsync_errors", "int", False),
    ("violations", "int", False),
    ("violation_kind", "string", True),
    ("violation_detail", "string", True),
    ("trace_sha256", "string", False),
    ("repro", "string", False),
    ("scenario", "string", False),
)
NAMES = tuple(c[0] for c in COLUMNS)

Record = tuple[Any, ...]


def repro_line(scenario: str, seed: int) -> str:
    """The one command that replays this seed (add `--trace` for the event trace)."""
    return f"python -m metaquorum.sim --seed {seed} --scenario {scenario}"


def to_record(result: SeedResult) -> Record:
    params = result.params
    config = params["config"]
    assert isinstance(config, dict)
    first = result.violations[0] if result.violations else None
    return (
        result.scenario.split("+", 1)[0],
        result.seed,
        params["voters"],
        params["observers"],
        config["election_timeout_ms"],
        config["fetch_timeout_ms"],
        config["election_backoff_max_ms"],
        result.events,
        result.elections,
        result.time_to_first_leader_ms,
        list(result.commit_latencies_ms),
        result.appends_committed,
        result.appends_failed,
        result.unavailable_ms,
        result.committed_offsets,
        result.fsync_errors,
        len(result.violations),
        None if first is None else str(first["kind"]),
        None if first is None else str(first["detail"]),
        result.trace_sha256,
        repro_line(result.scenario, result.seed),
        result.scenario,
    )


def run_task(scenario: str, start: int, stop: int) -> Iterator[Record]:
    for seed in range(start, stop):
        result, _ = run_scenario(scenario, seed)
        yield to_record(result)


def run_tasks(tasks: Iterable[tuple[str, int, int]]) -> Iterator[Record]:
    """What `mapPartitions` calls: one partition holds one or more (scenario, start, stop)."""
    for scenario, start, stop in tasks:
        yield from run_task(scenario, start, stop)


def as_dict(record: Record) -> dict[str, Any]:
    return dict(zip(NAMES, record, strict=True))

"""`--no-spark`: the same campaign on a plain process pool, records kept as JSON lines.

Role: the path a user asks for explicitly when there is no JVM or the campaign is tiny; never a
silent fallback for a Spark failure. Same tasks (`spec.tasks`), same records (`records.run_tasks`),
aggregated in Python (`aggregate.python_aggregates`).
Invariants: `records.jsonl` gains whole tasks only (a task's lines are written together after it
finished), so a re-run skips exactly the seeds present, like the Parquet path.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from metaquorum_pipeline import records
from metaquorum_pipeline.spec import Spec, Task, tasks


def records_file(out: Path) -> Path:
    return out / "records.jsonl"


def load(
    out: Path, scenarios: list[str], seeds: tuple[int, int] | None = None
) -> list[records.Record]:
    path = records_file(out)
    if not path.exists():
        return []
    wanted = set(scenarios)
    rows = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["scenario"] in wanted and (seeds is None or seeds[0] <= rec["seed"] < seeds[1]):
            rows.append(tuple(rec[n] for n in records.NAMES))
    return rows


def _run(task: Task) -> list[records.Record]:
    return list(records.run_task(*task))


def run(spec: Spec, out: Path, workers: int | None = None) -> dict[str, Any]:
    scenarios = [c.scenario for c in spec.cells]
    done: dict[str, set[int]] = {}
    for row in load(out, scenarios):
        rec = records.as_dict(row)
        done.setdefault(rec["scenario"], set()).add(rec["seed"])
    todo = tasks(spec, done)
    seeds = sum(stop - start for _, start, stop in todo)
    workers = workers or os.cpu_count() or 1
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    with records_file(out).open("a") as f, ProcessPoolExecutor(workers) as pool:
        for batch in pool.map(_run, todo):
            f.write("".join(json.dumps(records.as_dict(r)) + "\n" for r in batch))
            f.flush()
    return {
        "tasks": len(todo),
        "seeds_run": seeds,
        "seeds_skipped": spec.total_seeds - seeds,
        "seconds": time.monotonic() - started,
        "workers": workers,
    }

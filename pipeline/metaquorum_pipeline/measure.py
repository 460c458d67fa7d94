"""`metaquorum-pipeline measure`: what a campaign costs here, with and without Spark.

Role: the figures in docs/pipeline.md — simulator seeds/s in a plain loop (one core), Spark
seeds/s on `local[1]` and `local[2]`, the `--no-spark` pool on 2 workers, Spark's session
start, its fixed cost per job (a one-seed campaign) and per task (the same seeds as 1-seed
tasks versus a few large ones). Prints one JSON object; nothing asserts speed.
Invariants: every Spark figure comes from `sparkjob.run` (the campaign's own code path, Parquet
write included) in a fresh output dir; a session is stopped before the next starts.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from metaquorum_pipeline import local, records, sparkjob, spec


def _spec(mix: str, seeds: int, per_task: int, start: int = 0) -> spec.Spec:
    return spec.parse(
        {"mixes": [mix], "seeds": {"start": start, "count": seeds}, "seeds_per_task": per_task}
    )


def _plain(mix: str, seeds: int) -> float:
    started = time.monotonic()
    for _ in records.run_task(mix, 0, seeds):
        pass
    return seeds / (time.monotonic() - started)


def _spark(cores: int, mix: str, seeds: int, tmp: Path) -> dict[str, Any]:
    started = time.monotonic()
    spark = sparkjob.session(f"local[{cores}]", "metaquorum-pipeline-measure")
    out: dict[str, Any] = {"session_start_s": time.monotonic() - started}
    try:

        def job(name: str, sp: spec.Spec) -> float:
            return float(
                sparkjob.run(spark, sp, tmp / f"{cores}-{name}", progress=False)["seconds"]
            )

        out["first_job_1_seed_s"] = job("first", _spec(mix, 1, 1, start=10**6))
        out["job_1_seed_s"] = min(job(f"one{i}", _spec(mix, 1, 1, start=i)) for i in range(3))
        out["throughput_seeds_per_s"] = seeds / job("many", _spec(mix, seeds, 50))
        if cores == 1:
            small = max(50, seeds // 10)
            fine = job("fine", _spec(mix, small, 1))
            coarse = job("coarse", _spec(mix, small, small // 2))
            out["per_task_overhead_s"] = (fine - coarse) / (small - 2)
    finally:
        spark.stop()
    return out


def measure(mix: str = "chaos", seeds: int = 1000) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="metaquorum-measure-") as d:
        tmp = Path(d)
        result: dict[str, Any] = {"mix": mix, "seeds": seeds, "cpus": os.cpu_count()}
        result["load_average_before"] = os.getloadavg()[0]  # other work on the machine skews it
        result["plain_loop_seeds_per_s"] = _plain(mix, seeds)
        seed_s = 1 / result["plain_loop_seeds_per_s"]
        for cores in (1, 2):
            result[f"local[{cores}]"] = _spark(cores, mix, seeds, tmp)
            result[f"local[{cores}]"]["job_overhead_s"] = (
                result[f"local[{cores}]"]["job_1_seed_s"] - seed_s
            )
        pool = local.run(_spec(mix, seeds, 50), tmp / "pool", workers=2)
        result["no_spark_2_workers_seeds_per_s"] = seeds / pool["seconds"]
        one = result["local[1]"]["throughput_seeds_per_s"]
        two = result["local[2]"]["throughput_seeds_per_s"]
        result["parallel_efficiency_1_to_2"] = two / (2 * one)
        result["load_average_after"] = os.getloadavg()[0]
        return result


def main(mix: str, seeds: int) -> int:
    print(json.dumps(measure(mix, seeds), indent=1))
    return 0

"""The Spark side of a campaign: the session, the seeds already done, the job, the Parquet.

Role: start (or join) a Spark application on any master (`local[N]`, `spark://host:port`, ...),
find which (scenario, seed) pairs the output already holds, run the missing seed ranges in the
executors (one task per range, `mapPartitions` over `records.run_tasks`), append the records
to Parquet partitioned by scenario, and show progress fed by Spark's status tracker.
Invariants: a run appends only seeds absent from the output, so re-running a spec is resumable
and never duplicates a seed; the append is one Spark job whose output commit is all-or-nothing,
so an interrupted run leaves the Parquet as it was. Spark's own logging is set to ERROR (our
log4j2 file) before the JVM starts; executors use this interpreter (`sys.executable`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from metaquorum_pipeline import records
from metaquorum_pipeline.spec import Spec, Task, tasks

LOG4J = Path(__file__).with_name("log4j2.properties")
JOB_GROUP = "metaquorum-campaign"


def _spark_type(name: str) -> Any:
    from pyspark.sql import types as st

    simple = {"string": st.StringType(), "bigint": st.LongType(), "int": st.IntegerType()}
    if name == "array<int>":
        return st.ArrayType(st.IntegerType(), containsNull=False)
    return simple[name]


def schema() -> Any:
    """The Parquet schema: `records.COLUMNS` as a Spark StructType."""
    from pyspark.sql import types as st

    return st.StructType(
        [st.StructField(n, _spark_type(t), nullable) for n, t, nullable in records.COLUMNS]
    )


def session(
    master: str, app_name: str = "metaquorum-pipeline", conf: dict[str, str] | None = None
) -> Any:
    """A SparkSession on `master` with quiet logs; executors run this Python interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    java_opts = f"-Dlog4j2.configurationFile=file:{LOG4J}"
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        .config("spark.executorEnv.PYTHONHASHSEED", "0")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def records_path(out: Path) -> Path:
    return out / "records"


def done_seeds(spark: Any, out: Path, scenarios: list[str]) -> dict[str, set[int]]:
    """The seeds of these scenarios the output already holds (resumability)."""
    path = records_path(out)
    if not path.is_dir() or not any(path.glob("scenario=*")):
        return {}
    from pyspark.sql import functions as sf

    df = spark.read.schema(schema()).parquet(str(path))
    rows = (
        df.where(sf.col("scenario").isin(scenarios))
        .groupBy("scenario")
        .agg(sf.collect_set("seed").alias("seeds"))
        .collect()
    )
    return {r["scenario"]: set(r["seeds"]) for r in rows}


class Progress:
    """Prints `done/total tasks, seeds/s, ETA` from Spark's status tracker while a job runs."""

    def __init__(self, spark: Any, total_tasks: int, total_seeds: int, stream: Any = None):
        self.sc = spark.sparkContext
        self.total_tasks = total_tasks
        self.total_seeds = total_seeds
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.last_print = 0.0

    def completed_tasks(self) -> int:
        tracker = self.sc.statusTracker()
        done = 0
        for job_id in tracker.getJobIdsForGroup(JOB_GROUP):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                done += stage.numCompletedTasks if stage else 0
        return min(done, self.total_tasks)

    def line(self, done: int) -> str:
        elapsed = time.monotonic() - self.started
        frac = done / self.total_tasks if self.total_tasks else 1.0
        eta = f"{elapsed / frac - elapsed:5.0f}s" if 0 < frac < 1 else "   --"
        bar = "#" * int(30 * frac)
        seeds = int(frac * self.total_seeds)
        return (
            f"[{bar:<30}] {done}/{self.total_tasks} tasks, ~{seeds} seeds, "
            f"{elapsed:5.0f}s elapsed, ETA {eta}"
        )

    def tick(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last_print < (0.5 if self.tty else 10.0):
            return
        self.last_print = now
        done = self.total_tasks if final else self.completed_tasks()
        end = "\n" if final or not self.tty else ""
        self.stream.write(("\r" if self.tty else "") + self.line(done) + end)
        self.stream.flush()


def run(spark: Any, spec: Spec, out: Path, *, progress: bool = True) -> dict[str, Any]:
    """Run the spec's missing seeds; returns what ran: tasks, seeds, seconds, seeds skipped."""
    scenarios = [c.scenario for c in spec.cells]
    done = done_seeds(spark, out, scenarios)
    todo: list[Task] = tasks(spec, done)
    seeds = sum(stop - start for _, start, stop in todo)
    info: dict[str, Any] = {
        "tasks": len(todo),
        "seeds_run": seeds,
        "seeds_skipped": spec.total_seeds - seeds,
        "seconds": 0.0,
        "default_parallelism": spark.sparkContext.defaultParallelism,
    }
    if not todo:
        return info
    started = time.monotonic()
    errors: list[BaseException] = []

    def job() -> None:
        try:
            spark.sparkContext.setJobGroup(JOB_GROUP, f"campaign {spec.name}")
            # One task per seed range: each partition holds exactly one (scenario, start, stop).
            rows = spark.sparkContext.parallelize(todo, len(todo)).mapPartitions(records.run_tasks)
            df = spark.createDataFrame(rows, schema(), verifySchema=False)
            df.write.mode("append").partitionBy("scenario").parquet(str(records_path(out)))
        except BaseException as e:
            errors.append(e)

    worker = threading.Thread(target=job, name="campaign-job", daemon=True)
    bar = Progress(spark, len(todo), seeds) if progress else None
    worker.start()
    while worker.is_alive():
        worker.join(0.25)
        if bar is not None:
            bar.tick()
    if errors:
        raise errors[0]
    if bar is not None:
        bar.tick(final=True)
    info["seconds"] = time.monotonic() - started
    info["executors"] = executors(spark)
    return info


def executors(spark: Any) -> int:
    """Executors registered with the driver (0 in local mode, where the driver runs tasks)."""
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    return max(0, len(infos) - 1)


def load(spark: Any, out: Path, scenarios: list[str], seeds: tuple[int, int] | None = None) -> Any:
    """The records of these scenarios (and seeds in [start, stop), if given) as a DataFrame."""
    from pyspark.sql import functions as sf

    df = spark.read.schema(schema()).parquet(str(records_path(out)))
    df = df.where(sf.col("scenario").isin(scenarios))
    return df if seeds is None else df.where(sf.col("seed").between(seeds[0], seeds[1] - 1))

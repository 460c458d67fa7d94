"""`metaquorum-pipeline`: the pipeline's command line.

Role: `campaign SPEC.yaml --out DIR [--master M] [--no-spark]` runs the spec's missing seeds
(Spark on `--master`, `local[*]` by default; a process pool only with `--no-spark`), then writes
DIR/aggregates.json and the self-contained DIR/report.html over the spec's cells and seeds found
in DIR (other seeds there are kept, not reported). `tune` is the same, then prints per fault
mix which timeouts to use (tune.py).
`logs PATH... --out DIR` analyses metadata-log segments and snapshots (logs.py) into
DIR/batches (Parquet), DIR/logs.json and DIR/logs.html. `measure` prints what a campaign costs
here (measure.py).
Exit 0 when no seed broke an invariant, 1 when some did, 2 on a bad spec.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metaquorum_pipeline import aggregate, report, spec


def campaign(args: argparse.Namespace) -> int:
    try:
        sp = spec.load(args.spec)
    except (OSError, ValueError) as e:
        print(f"metaquorum-pipeline: bad spec {args.spec}: {e}", file=sys.stderr)
        return 2
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if Path(args.spec).resolve() != (out / "spec.yaml").resolve():
        shutil.copyfile(args.spec, out / "spec.yaml")
    scenarios = [c.scenario for c in sp.cells]
    seed_range = (sp.seed_start, sp.seed_stop)  # the report covers the spec's seeds only
    started = time.monotonic()
    print(f"campaign {sp.name}: {len(sp.cells)} cells x {sp.seeds_per_cell} seeds", file=sys.stderr)
    run: dict[str, Any]
    if args.no_spark:
        from metaquorum_pipeline import local

        run = {"engine": "process pool", **local.run(sp, out, args.workers)}
        agg = aggregate.python_aggregates(local.load(out, scenarios, seed_range))
    else:
        from metaquorum_pipeline import sparkjob

        conf = dict(args.conf)
        spark = sparkjob.session(args.master, conf=conf)
        try:
            run = {"engine": "spark", "master": args.master}
            run.update(sparkjob.run(spark, sp, out, progress=not args.quiet))
            df = sparkjob.load(spark, out, scenarios, seed_range)
            agg = aggregate.spark_aggregates(spark, df)
        finally:
            spark.stop()
    run["seeds_per_s"] = run["seeds_run"] / run["seconds"] if run["seconds"] else None
    run["total_s"] = time.monotonic() - started
    run["utc"] = datetime.now(UTC).isoformat(timespec="seconds")
    with (out / "runs.jsonl").open("a") as f:  # every run into DIR, for the report's history
        f.write(json.dumps(run) + "\n")
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line]
    summary = {"name": sp.name, "run": run, "runs": runs, **agg}
    (out / "aggregates.json").write_text(json.dumps(summary, indent=1))
    (out / "report.html").write_text(report.render(agg, name=sp.name, runs=runs))
    print(
        f"{agg['seeds']} seeds ({run['seeds_run']} run now, {run['seeds_skipped']} already there), "
        f"{agg['violating_seeds']} violating; report: {out / 'report.html'}",
        file=sys.stderr,
    )
    if args.command == "tune":
        from metaquorum_pipeline.tune import table, tune

        tuning = tune(agg["cells"])
        print(table(tuning) if tuning else "the grid varies no controller.quorum timeout")
    return 1 if agg["violating_seeds"] else 0


def logs(args: argparse.Namespace) -> int:
    from metaquorum_pipeline import logs as scan
    from metaquorum_pipeline import logs_report, sparkjob

    started = time.monotonic()
    spark = sparkjob.session(args.master, conf=dict(args.conf))
    try:
        try:
            run = scan.run(spark, args.paths, args.out, args.split_bytes or scan.SPLIT_BYTES)
        except ValueError as e:
            print(f"metaquorum-pipeline logs: {e}", file=sys.stderr)
            return 2
        df = spark.read.schema(scan.schema()).parquet(str(args.out / "batches"))
        agg = logs_report.aggregates(spark, df)
    finally:
        spark.stop()
    run["seconds"] = round(time.monotonic() - started, 1)
    (args.out / "logs.json").write_text(json.dumps({"run": run, **agg}, indent=1))
    (args.out / "logs.html").write_text(logs_report.render(agg, run=run))
    print(
        f"{run['files']} files, {len(agg['epochs'])} epochs, {len(agg['invalid'])} invalid "
        f"ranges; report: {args.out / 'logs.html'}",
        file=sys.stderr,
    )
    return 0


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="metaquorum-pipeline", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    campaign_parser = sub.add_parser("campaign", help="run a campaign and write its report")
    tune_parser = sub.add_parser("tune", help="the same, then print the timeout recommendations")
    for c in (campaign_parser, tune_parser):
        _campaign_args(c)
    m = sub.add_parser("measure", help="seeds/s and Spark's overhead here (docs/pipeline.md)")
    m.add_argument("--mix", default="chaos")
    m.add_argument("--seeds", type=int, default=1000)
    lg = sub.add_parser("logs", help="analytics over metadata-log segments and snapshots")
    lg.add_argument("paths", nargs="+", type=Path, help="data dirs, log dirs or files")
    lg.add_argument("--out", type=Path, required=True)
    lg.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    lg.add_argument("--conf", action="append", default=[], type=_setting, metavar="KEY=VALUE")
    lg.add_argument("--split-bytes", type=int, default=None, help="bytes per Spark task")
    args = parser.parse_args(argv)
    if args.command == "logs":
        return logs(args)
    if args.command == "measure":
        from metaquorum_pipeline import measure

        return measure.main(args.mix, args.seeds)
    return campaign(args)


def _campaign_args(c: argparse.ArgumentParser) -> None:
    c.add_argument("spec", help="the campaign's YAML spec (see pipeline/campaigns/)")
    c.add_argument("--out", type=Path, required=True, help="output dir (resumable)")
    c.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    c.add_argument(
        "--conf",
        action="append",
        default=[],
        type=_setting,
        metavar="KEY=VALUE",
        help="a Spark setting, e.g. spark.driver.host=10.0.0.5 (repeatable)",
    )
    c.add_argument("--no-spark", action="store_true", help="run on a local process pool")
    c.add_argument("--workers", type=int, default=None, help="--no-spark pool size")
    c.add_argument("--quiet", action="store_true", help="no progress bar")


if __name__ == "__main__":
    sys.exit(main())

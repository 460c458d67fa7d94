"""The soak's report from its run directory: verdicts, per-hour growth, PNG plots, markdown.

Role: reads `config.json`, `samples.jsonl` and `events.jsonl` of a run directory (written
incrementally by `tests.soak.run`, so a run that was killed still has its data), judges them
(`trend.judge`), writes `report.md` and `rss.png`, `fds.png`, `threads.png`, `disk.png`,
`latency.png`, `gc.png` beside them, and returns the verdicts. Re-run on any run directory:
`.venv/bin/python -m tests.soak.report DIR` (exit 1 if a check failed); `--publish
docs/soak-report` also copies the report, plots, config, events and gzipped samples there.

Invariants: reads only the run directory; a truncated last line (the run killed mid-write)
is skipped, not fatal.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from tests.soak.trend import Verdict, failed, judge, slope_per_hour

MIB = 1 << 20


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # the run was killed while writing this line
    return out


def _plot(rows: list[dict[str, Any]], field: str, scale: float, ylabel: str, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(9, 3.5))
    for nid in sorted({r["node"] for r in rows}):
        pts = [
            (r["t"] / 3600, r[field] * scale)
            for r in rows
            if r["node"] == nid and r.get(field) is not None
        ]
        if pts:
            ax.plot(*zip(*pts, strict=True), label=f"node {nid}", linewidth=1)
    ax.set_xlabel("hours")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def _plot_latency(client: list[dict[str, Any]], out: Path) -> None:
    fig, ax = plt.subplots(figsize=(9, 3.5))
    for key in ("p50_ms", "p99_ms"):
        pts = [(r["t"] / 3600, r[key]) for r in client if r.get(key) is not None]
        if pts:
            ax.plot(*zip(*pts, strict=True), label=key.replace("_ms", ""), linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("hours")
    ax.set_ylabel("commit latency, ms (per 10 s window)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def _growth_table(nodes: list[dict[str, Any]]) -> list[str]:
    """Per node process (pid) that ran at least 20 minutes: growth per hour over its life."""
    lines = [
        "| node | pid | ran | RSS MiB (first/last) | RSS MiB/h | fds/h | threads/h | disk MiB/h |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for nid, pid in sorted({(r["node"], r["pid"]) for r in nodes if r.get("up")}):
        mine = [r for r in nodes if r["node"] == nid and r["pid"] == pid and r.get("up")]
        span = mine[-1]["t"] - mine[0]["t"]
        if span < 1200 or len(mine) < 10:
            continue
        slopes = [
            slope_per_hour([(r["t"], r[f] * s) for r in mine])
            for f, s in (
                ("rss_bytes", 1 / MIB),
                ("fds", 1),
                ("threads", 1),
                ("disk_bytes", 1 / MIB),
            )
        ]
        lines.append(
            f"| {nid} | {pid} | {span / 3600:.2f} h | {mine[0]['rss_bytes'] / MIB:.0f} / "
            f"{mine[-1]['rss_bytes'] / MIB:.0f} | " + " | ".join(f"{s:+.2f}" for s in slopes) + " |"
        )
    return lines


def _hourly_latency(client: list[dict[str, Any]], duration: float) -> list[str]:
    out = []
    for h in range(int(duration // 3600) + 1):
        p99s = sorted(
            r["p99_ms"]
            for r in client
            if h * 3600 <= r["t"] < (h + 1) * 3600 and r.get("p99_ms") is not None
        )
        if p99s:
            out.append(f"| {h} | {p99s[-1]:.0f} | {p99s[len(p99s) // 2]:.0f} |")
    return out


def write_report(run: Path) -> list[Verdict]:
    config = json.loads((run / "config.json").read_text())
    rows = read_jsonl(run / "samples.jsonl")
    events = read_jsonl(run / "events.jsonl")
    duration = max((r["t"] for r in rows), default=0.0)
    verdicts = judge(rows, duration, int(config["segment_bytes"]))
    nodes = [r for r in rows if r.get("node") != "client"]
    client = [r for r in rows if r.get("node") == "client"]
    _plot(nodes, "rss_bytes", 1 / MIB, "RSS, MiB", run / "rss.png")
    _plot(nodes, "fds", 1, "open fds", run / "fds.png")
    _plot(nodes, "threads", 1, "threads", run / "threads.png")
    _plot(nodes, "disk_bytes", 1 / MIB, "data dir, MiB on disk", run / "disk.png")
    _plot(nodes, "gc2", 1, "gen-2 GC collections (cumulative)", run / "gc.png")
    _plot_latency(client, run / "latency.png")
    acked = sum(r.get("acked", 0) for r in client)
    failed_n = sum(r.get("failed", 0) for r in client)
    shed = sum(r.get("shed", 0) for r in client)
    kinds = [e["kind"] for e in events]
    hourly = _hourly_latency(client, duration)
    lines = [
        f"# Soak report: {run.name}",
        "",
        f"Ran {duration / 3600:.2f} h ({duration:.0f} s) of the planned "
        f"{config['seconds']} s; offered {config['rate']} appends/s (open loop); "
        f"segment.bytes {config['segment_bytes']}, snapshot every "
        f"{config['snapshot_bytes']} applied bytes; leader transfer every "
        f"{config['transfer_every']} s, node {config['replace_node']} replaced every "
        f"{config['replace_every']} s. Command: `{config['command']}`",
        "",
        f"Appends acknowledged {acked}, failed {failed_n}, shed (not offered: too many in "
        f"flight) {shed}. Leader transfers {kinds.count('transfer')}, member replacements "
        f"{kinds.count('replace')}, chores that failed {kinds.count('chore-failed')}.",
        "",
        "## Verdicts (docs/soak.md states the bounds and why)",
        "",
        "```",
        *(v.line() for v in verdicts),
        "```",
        "",
        f"**FAILED: {len(failed(verdicts))} check(s)**" if failed(verdicts) else "**passed**",
        "",
        "## Growth per hour, per node process that ran 20 minutes or more",
        "",
        *_growth_table(nodes),
        "",
        "## Commit latency per hour (client, per 10 s window)",
        "",
        "| hour | worst window p99 ms | median window p99 ms |",
        "| --- | --- | --- |",
        *hourly,
        "",
        "![RSS](rss.png)",
        "![fds](fds.png)",
        "![threads](threads.png)",
        "![disk](disk.png)",
        "![latency](latency.png)",
        "![gc](gc.png)",
        "",
    ]
    (run / "report.md").write_text("\n".join(lines))
    return verdicts


def publish(run: Path, dest: Path) -> list[Path]:
    """Copy what a committed report needs into `dest`: report.md, the plots, config.json,
    events.jsonl and the samples gzipped."""
    dest.mkdir(parents=True, exist_ok=True)
    names = ["report.md", "config.json", "events.jsonl", *(p.name for p in run.glob("*.png"))]
    for name in names:
        shutil.copy2(run / name, dest / name)
    with (
        (run / "samples.jsonl").open("rb") as src,
        gzip.open(dest / "samples.jsonl.gz", "wb") as out,
    ):
        shutil.copyfileobj(src, out)
    return [dest / n for n in [*names, "samples.jsonl.gz"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write the soak report of a run directory")
    parser.add_argument("run", type=Path)
    parser.add_argument(
        "--publish", type=Path, help="also copy the report, plots and data here (docs/soak-report)"
    )
    args = parser.parse_args(argv)
    if not (args.run / "config.json").exists():
        print(f"{args.run} has no config.json: give the SOAK_OUT directory of a run")
        return 2
    verdicts = write_report(args.run)
    print("\n".join(v.line() for v in verdicts))
    print(f"report: {args.run / 'report.md'}")
    if args.publish is not None:
        print(f"published {len(publish(args.run, args.publish))} files to {args.publish}")
    return 1 if failed(verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())

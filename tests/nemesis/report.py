"""A campaign's report from its run directories: what `make nemesis` reports, over runs that may
have been made in several sittings (a 200-run campaign is ~4 hours here).

Role: read every `summary.json` under the given directories, keep one per seed (the newest),
recompute each run's availability from its kept history and nemesis log, and write the totals
(`run.campaign_totals`: runs, porcupine-checked operations, acknowledged
appends, faults by kind, failures, throughput in and out of faults, the longest stretch without
an acknowledged append) plus the per-run rows, as JSON and as a Markdown table.
`python -m tests.nemesis.report SOURCE... --json F --md F --export F.jsonl`: a source is a
directory of run dirs, or a `.jsonl` of summaries an earlier sitting exported (`--export`: the
fields the report reads, one run per line; what is kept in the repository between sittings,
since run dirs hold megabytes of history). Later sources win for a seed seen twice.
Invariants: a run without a verdict (no summary.json: interrupted) is counted apart, never as a
pass; every failed run is listed with its re-run command.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tests.nemesis import ledger
from tests.nemesis.run import campaign_totals
from tests.nemesis.stats import availability

KEPT = (
    *("seed", "duration_s", "kinds", "dynamic", "dir", "rerun", "ok", "faults_injected"),
    *("availability", "ledger", "findings", "notes", "recovery", "final_hw", "client_ops"),
)
KEPT_PORCUPINE = ("result", "operations", "appends_ok", "visualization")


def compact(summary: dict[str, Any]) -> dict[str, Any]:
    """What the report reads of a run's summary (no schedule: the seed redraws it)."""
    out = {k: summary[k] for k in KEPT if k in summary}
    p = summary.get("porcupine") or {}
    out["porcupine"] = {k: p[k] for k in KEPT_PORCUPINE if k in p}
    return out


def load(dirs: list[Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """The newest summary per seed, and the run dirs that have none."""
    by_seed: dict[int, dict[str, Any]] = {}
    unjudged: list[str] = []
    for base in dirs:
        if base.suffix == ".jsonl":
            for line in base.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    summary = json.loads(line)
                    by_seed[summary["seed"]] = summary
            continue
        for run_dir in sorted(p for p in base.iterdir() if p.is_dir()):
            path = run_dir / "summary.json"
            if not path.exists():
                unjudged.append(str(run_dir))
                continue
            summary = json.loads(path.read_text())
            if (run_dir / "history.jsonl").exists():  # recomputed: stats.py may have been fixed
                summary["availability"] = availability(
                    ledger.load_history(run_dir / "history.jsonl"),
                    ledger.load_history(run_dir / "nemesis.jsonl"),
                )
            by_seed[summary["seed"]] = summary  # sorted names: the newest run of a seed wins
    return [by_seed[s] for s in sorted(by_seed)], unjudged


def markdown(results: list[dict[str, Any]], totals: dict[str, Any], unjudged: list[str]) -> str:
    dynamic = sum(1 for r in results if r.get("dynamic"))
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(totals["faults_by_kind"].items()))
    lines = [
        f"- runs: {totals['runs']} ({dynamic} on a dynamic KIP-853 quorum), "
        f"{len(totals['failed'])} failed, {len(unjudged)} interrupted without a verdict",
        f"- operations checked by porcupine: {totals['checked_ops']:,}; "
        f"acknowledged appends: {totals['acked_appends']:,}",
        f"- faults injected: {totals['faults']:,} ({kinds})",
        f"- acknowledged appends/s (mean over runs): {totals['appends_per_s_in_faults']} while a "
        f"fault was active, {totals['appends_per_s_calm']} in calm stretches; longest stretch "
        f"without an acknowledged append: {totals['longest_write_gap_s']} s",
        "",
        "| seed | quorum | s | porcupine | ops | acked | faults | ok share | in faults/s "
        "| calm/s | longest gap s | verdict |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        p, a = r.get("porcupine") or {}, r.get("availability") or {}
        lines.append(
            f"| {r['seed']} | {'dynamic' if r.get('dynamic') else 'static'} | "
            f"{r['duration_s']:g} | {p.get('result')} | {p.get('operations', 0):,} | "
            f"{a.get('acked_appends', 0):,} | {sum(r['faults_injected'].values())} | "
            f"{a.get('append_ok_share', '')} | {a.get('appends_per_s_in_faults', '')} | "
            f"{a.get('appends_per_s_calm', '')} | {a.get('longest_write_gap_s', '')} | "
            f"{'PASS' if r['ok'] else 'FAIL: ' + r['rerun']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="a nemesis campaign's report from its run dirs")
    p.add_argument("dirs", type=Path, nargs="+")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--md", type=Path, default=None)
    p.add_argument("--export", type=Path, default=None)
    a = p.parse_args(argv)
    results, unjudged = load(a.dirs)
    if a.export:
        a.export.write_text("".join(json.dumps(compact(r)) + "\n" for r in results))
    totals = campaign_totals(results)
    totals["seeds"] = [r["seed"] for r in results]
    totals["interrupted"] = unjudged
    text = markdown(results, totals, unjudged)
    if a.json:
        a.json.write_text(json.dumps(totals, indent=1) + "\n")
    if a.md:
        a.md.write_text(text)
    print(text.split("\n\n")[0])
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())

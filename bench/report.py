"""Markdown report and PNG plots of one benchmark run (the JSON `python -m bench` writes).

Role: `write_report(json_path)` writes `<stem>.md` and `<stem>-*.png` beside the JSON: tables
of every figure for every system, ours/theirs ratios, the floor of one commit and issue 28's
bars (bench/bars.py) with what each measured, and the leader's profile. `python -m bench.report
RUN.json` redoes it.
Invariants: reads only the JSON (a report can be regenerated at any time); a system or step that
failed is shown as its error, never silently dropped.
"""

from __future__ import annotations

import json
import sys
from itertools import product
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench import bars, interpreter
from bench.bars import (
    SATURATION_ACHIEVED,
    SATURATION_P99_MS,
    fmt,
    ratio,
    saturation_rate,
    system_rows,
)
from bench.common import SLOW_FAILOVER_S

NAMES = {"ours": "metaquorum (ours)", "etcd": "etcd 3.6.16", "kafka": "Kafka 4.3.1 TestRaftServer"}
NAMES["pysyncobj"] = "PySyncObj 0.3.17 (no fsync)"
NAMES["ours-plain-linger"] = "metaquorum, Kafka's plain 25 ms linger"


def _errors(r: dict[str, Any]) -> str:
    n = r.get("errors", 0)
    kinds = r.get("error_kinds") or {}
    if not n or not kinds:
        return str(n)
    return f"{n} (" + ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())) + ")"


def _closed_loop(res: dict[str, Any], stem: Path, md: list[str]) -> None:
    cl = res.get("closed_loop", {})
    md += ["## Closed-loop writes (100-byte records, N clients, one write in flight each)", ""]
    md += [
        "| system | clients | committed writes/s | p50 ms | p99 ms | p999 ms | max ms "
        "| server CPU core-s / 1,000 writes | load-generator CPU s | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rows in cl.items():
        if isinstance(rows, dict):
            md.append(f"| {NAMES.get(name, name)} | error: {rows.get('error')} |||||||||")
            continue
        for r in rows:
            md.append(
                f"| {NAMES.get(name, name)} | {r['clients']} | {fmt(r['ops_per_s'], 0)} "
                f"| {fmt(r['p50_ms'], 2)} | {fmt(r['p99_ms'], 2)} | {fmt(r['p999_ms'], 2)} "
                f"| {fmt(r['max_ms'], 1)} | {fmt(r['cpu_per_1000'], 3)} "
                f"| {fmt(r.get('client_cpu_s'), 2)} | {_errors(r)} |"
            )
    md += [
        "",
        "Ratios, ours / theirs (throughput: higher is better for us; latency: lower is):",
        "",
    ]
    md += [
        "| ours | clients | vs | writes/s | p50 | p99 | p999 | CPU per write |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for variant in ("ours", "ours-plain-linger"):
        ours = {r["clients"]: r for r in system_rows(res, "closed_loop", variant)}
        for other in ("etcd", "pysyncobj"):
            for r in system_rows(res, "closed_loop", other):
                o = ours.get(r["clients"])
                if o is None:
                    continue
                md.append(
                    f"| {variant} | {r['clients']} | {other} "
                    f"| {ratio(o['ops_per_s'], r['ops_per_s'])} "
                    f"| {ratio(o['p50_ms'], r['p50_ms'])} | {ratio(o['p99_ms'], r['p99_ms'])} "
                    f"| {ratio(o['p999_ms'], r['p999_ms'])} "
                    f"| {ratio(o['cpu_per_1000'], r['cpu_per_1000'])} |"
                )
    md.append("")
    if not any(isinstance(rows, list) and rows for rows in cl.values()):
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, rows in cl.items():
        if isinstance(rows, list) and rows:
            ax.plot(
                [r["clients"] for r in rows],
                [r["ops_per_s"] for r in rows],
                "o-",
                label=NAMES.get(name, name),
            )
    ax.set_xscale("log")
    ax.set_xlabel("concurrent closed-loop clients")
    ax.set_ylabel("committed writes/s")
    ax.set_title("Throughput vs clients (3 members, loopback, 100 B)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{stem}-throughput.png", dpi=110)
    plt.close(fig)
    clients = sorted({r["clients"] for rows in cl.values() if isinstance(rows, list) for r in rows})
    if clients:
        fig, axes = plt.subplots(1, len(clients), figsize=(4 * len(clients), 4), squeeze=False)
        for ax, n in zip(axes[0], clients, strict=True):
            for name, rows in cl.items():
                for r in rows if isinstance(rows, list) else []:
                    if r["clients"] == n and r.get("cdf"):
                        xs = [max(p[0], 1e-3) for p in r["cdf"]]
                        ax.plot(xs, [p[1] for p in r["cdf"]], label=NAMES.get(name, name))
            ax.set_xscale("log")
            ax.set_title(f"{n} clients")
            ax.set_xlabel("commit latency (ms)")
            ax.grid(True, alpha=0.3)
        axes[0][0].set_ylabel("fraction of writes")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(f"{stem}-latency-cdf.png", dpi=110)
        plt.close(fig)
    md += [f"![throughput vs clients]({stem.name}-throughput.png)", ""]
    md += [f"![latency CDFs]({stem.name}-latency-cdf.png)", ""]


def _saturation(pt: dict[str, list[dict[str, Any]]]) -> list[str]:
    if not pt:
        return []
    rates = {name: saturation_rate(rows) for name, rows in pt.items()}
    offered = sorted({r["offered_per_s"] for rows in pt.values() for r in rows if "error" not in r})
    cells = ", ".join(
        f"{NAMES.get(n, n)}: {r if r is not None else 'none'}" for n, r in rates.items()
    )
    line = (
        f"Saturation (offered {', '.join(map(str, offered))}/s): the highest offered rate with "
        f"p99 <= {SATURATION_P99_MS:.0f} ms and >= {SATURATION_ACHIEVED:.0%} of it committed: "
        f"{cells}"
    )
    o, k = rates.get("ours"), rates.get("kafka")
    if o is not None and k is not None:
        line += f"; ours / Kafka = {ratio(o, k)}"
    return [line + ".", ""]


def _perf(res: dict[str, Any], stem: Path, md: list[str]) -> None:
    pt = res.get("perf_test", {})
    md += ["## Leader-generated load: `metaquorum perf-test` vs Kafka's `TestRaftServer`", ""]
    md += [
        "Same offered records/s of 100 bytes; latency = append to commit on the leader, as each "
        "tool prints it (Kafka's windows: up to 60 s, 1 ms buckets capped at 250 ms, so a "
        "249.0 ms figure means 'at least 249 ms'); achieved = committed offsets/s from the "
        "leader's high watermark over the second half of the run.",
        "",
        "| offered/s | system | achieved/s | printed bytes/s | p75 ms | p99 ms | p999 ms "
        "| CPU core-s / 1,000 records |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    by_rate: dict[int, dict[str, dict[str, Any]]] = {}
    for name, rows in pt.items():
        for r in rows:
            if "error" in r:
                md.append(f"| | {NAMES.get(name, name)} | error: {r['error']} ||||||")
                continue
            by_rate.setdefault(r["offered_per_s"], {})[name] = r
            p = r.get("printed") or {}
            md.append(
                f"| {r['offered_per_s']} | {NAMES.get(name, name)} "
                f"| {fmt(r['achieved_per_s'], 0)} | {fmt(p.get('bytes_per_s'), 0)} "
                f"| {fmt(p.get('p75_ms'))} | {fmt(p.get('p99_ms'))} "
                f"| {fmt(p.get('p999_ms'))} | {fmt(r['cpu_per_1000'], 3)} |"
            )
    md += [
        "",
        "| offered/s | ours/Kafka achieved | ours/Kafka p75 | ours/Kafka p99 | ours/Kafka CPU |",
    ]
    md += ["|---:|---|---|---|---|"]
    for (rate, d), variant in product(sorted(by_rate.items()), ("ours", "ours-plain-linger")):
        o, k = d.get(variant), d.get("kafka")
        if o is None or k is None:
            continue
        op, kp = o.get("printed") or {}, k.get("printed") or {}
        label = f"{rate}" if variant == "ours" else f"{rate} (ours with Kafka's plain linger)"
        md.append(
            f"| {label} | {ratio(o['achieved_per_s'], k['achieved_per_s'])} "
            f"| {ratio(op.get('p75_ms'), kp.get('p75_ms'))} "
            f"| {ratio(op.get('p99_ms'), kp.get('p99_ms'))} "
            f"| {ratio(o['cpu_per_1000'], k['cpu_per_1000'])} |"
        )
    md.append("")
    md += _saturation(pt)
    if not by_rate:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in pt:
        pts = sorted((rate, d[name]) for rate, d in by_rate.items() if name in d)
        pts = [(rate, r) for rate, r in pts if r.get("printed")]
        if pts:
            ax.plot(
                [x for x, _ in pts],
                [r["printed"]["p75_ms"] for _, r in pts],
                "o-",
                label=f"{name} p75",
            )
            ax.plot(
                [x for x, _ in pts],
                [r["printed"]["p99_ms"] for _, r in pts],
                "s--",
                label=f"{name} p99",
            )
    ax.set_xscale("log")
    ax.set_xlabel("offered records/s")
    ax.set_ylabel("append-to-commit latency (ms)")
    ax.set_title("perf-test vs TestRaftServer")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{stem}-perf-test.png", dpi=110)
    plt.close(fig)
    md += [f"![perf-test latency]({stem.name}-perf-test.png)", ""]


def _failover(res: dict[str, Any], stem: Path, md: list[str]) -> None:
    fo = res.get("failover", {})
    md += ["## Failover: signal to the leader -> first commit of a newer epoch", ""]
    md += ["| case | n | failed | p50 ms | p99 ms | max ms |", "|---|---:|---:|---:|---:|---:|"]
    for case, r in fo.items():
        if "error" in r:
            md.append(f"| {case} | error: {r['error']} |||||")
            continue
        md.append(
            f"| {case} | {r['n']} | {r['failures']} | {fmt(r['p50_ms'], 0)} "
            f"| {fmt(r['p99_ms'], 0)} | {fmt(r['max_ms'], 0)} |"
        )
    o, k = fo.get("ours_sigkill", {}), fo.get("kafka_sigkill", {})
    e = fo.get("etcd_sigkill", {})
    md += [
        "",
        f"Ours / Kafka SIGKILL: p50 {ratio(o.get('p50_ms'), k.get('p50_ms'))}, "
        f"p99 {ratio(o.get('p99_ms'), k.get('p99_ms'))}; ours / etcd: p50 "
        f"{ratio(o.get('p50_ms'), e.get('p50_ms'))}, "
        f"p99 {ratio(o.get('p99_ms'), e.get('p99_ms'))}.",
        "",
    ]
    slow = [(c, x) for c, r in fo.items() for x in r.get("slow") or []]
    if slow:  # bench/workloads.py keeps every node's log from the kill on
        md += [
            f"Slow failovers (over {SLOW_FAILOVER_S:g} s), the nodes' logs from the kill on:",
            "",
        ]
        md += [
            f"- {c}: {'never finished' if x['ms'] is None else fmt(x['ms'], 0) + ' ms'}, "
            f"`{x['logs']}`"
            for c, x in slow
        ]
        md.append("")
    cases = [(c, r["values_ms"]) for c, r in fo.items() if r.get("values_ms")]
    if cases:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.boxplot([v for _, v in cases], tick_labels=[c for c, _ in cases], showfliers=True)
        for i, (_, v) in enumerate(cases, start=1):
            ax.plot([i] * len(v), v, "k.", alpha=0.4)
        ax.set_ylabel("ms from the signal to the first commit of the new epoch")
        ax.set_ylim(bottom=0)
        ax.set_title("Leader failover")
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(f"{stem}-failover.png", dpi=110)
        plt.close(fig)
        md += [f"![failover]({stem.name}-failover.png)", ""]


def _profile(res: dict[str, Any], md: list[str]) -> None:
    prof = res.get("profile")
    if not prof:
        return
    md += [
        f"## Where our leader's time goes (py-spy, {prof.get('clients')} closed-loop clients, "
        f"{prof.get('samples')} samples, "
        f"{fmt(prof.get('ops_per_s_while_profiled'), 0)} writes/s while profiled)",
        "",
        "| self % | function | | inclusive % | function |",
        "|---:|---|---|---:|---|",
    ]
    for (sf, sp), (inf, ip) in zip(
        prof.get("self", [])[:20], prof.get("inclusive", [])[:20], strict=False
    ):
        md.append(f"| {sp:.1f} | `{sf}` | | {ip:.1f} | `{inf}` |")
    md.append("")


def write_report(json_path: Path) -> Path:
    res = json.loads(json_path.read_text())
    stem = json_path.with_suffix("")
    m = res.get("meta", {})
    md = [
        f"# Side-by-side benchmark, {m.get('mode')} run of {m.get('started_utc')}",
        "",
        f"3 members of each system on one {m.get('cpus')}-core machine ({m.get('platform')}), "
        f"loopback, one disk; load average {m.get('loadavg_at_start')} at the start, "
        f"{m.get('loadavg_at_end')} at the end; finished {m.get('finished_utc')}. "
        f"Commit {m.get('git')}; Python {m.get('python')}; {m.get('go')}; {m.get('java')}; "
        f"etcd {m.get('etcd')}; Kafka {m.get('kafka')}; PySyncObj {m.get('pysyncobj')}. "
        "Method: docs/bench.md.",
        "",
        f"Interpreter of our nodes: {interpreter.summary(m.get('interpreter') or {})}.",
        "",
        "PySyncObj neither fsyncs its journal nor persists its vote (currentTerm/votedFor): its "
        "figures are an upper bound for a non-durable Raft, not a like-for-like comparison.",
        "",
        *bars.floor_lines(res),
        *bars.section(res),
    ]
    _closed_loop(res, stem, md)
    _perf(res, stem, md)
    _failover(res, stem, md)
    _profile(res, md)
    out = stem.with_suffix(".md")
    out.write_text("\n".join(md) + "\n")
    return out


if __name__ == "__main__":
    print(write_report(Path(sys.argv[1])))

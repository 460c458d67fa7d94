"""The campaign report: one self-contained HTML file with plots, tables and repro lines.

Role: turn the aggregates (`aggregate.py`) into what an engineer reads before changing a
`controller.quorum.*` timeout: distributions of time to the first leader and commit latency,
unavailable time and leader changes per grid cell, violations over the grid, and for every
listed violation the one command that replays it.
Invariants: the file references nothing outside itself (plots are SVG in `data:` URIs, styles
inline); every violation row carries its repro line; matplotlib runs headless (Agg).
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

matplotlib.rcParams.update({"svg.hashsalt": "metaquorum", "svg.fonttype": "none", "font.size": 9})

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; }
th { background: #f0f0f0; } td.l, th.l { text-align: left; }
tr.bad td { background: #fde8e8; }
code { background: #f6f6f6; padding: 1px 4px; }
.plots img { max-width: 100%; margin: 0.5em 0; border: 1px solid #eee; }
.summary { font-size: 1.1em; }
"""


def _svg(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()


def _cdf_plot(cells: list[dict[str, Any]], key: str, title: str, ylabel: str, log: bool) -> str:
    from metaquorum_pipeline.aggregate import CDF_POINTS

    fig, ax = plt.subplots(figsize=(8, 4))
    for cell in cells:
        if cell.get(key):
            ax.plot(cell[key], CDF_POINTS, label=cell["scenario"], drawstyle="steps-post")
    if log:
        ax.set_xscale("symlog", linthresh=10)
    ax.set(title=title, xlabel="ms", ylabel=ylabel)
    ax.grid(alpha=0.3)
    if len(cells) <= 8:
        ax.legend(fontsize=7, loc="lower right")
    elif len(cells) <= 40:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _svg(fig)


def _bars(cells: list[dict[str, Any]], mean_key: str, pct_key: str, title: str, xlabel: str) -> str:
    names = [c["scenario"] for c in cells]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.28 * len(cells)))
    means = [c[mean_key] for c in cells]
    p99 = [c[pct_key][2] if c.get(pct_key) else 0 for c in cells]
    ax.barh(names, means, color="#4c78a8", label="mean")
    ax.scatter(p99, names, color="#e45756", marker="|", s=200, label="p99", zorder=3)
    ax.invert_yaxis()
    ax.set(title=title, xlabel=xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _svg(fig)


def _violations_plot(cells: list[dict[str, Any]]) -> str:
    names = [c["scenario"] for c in cells]
    kinds = sorted({k for c in cells for k in c["violation_kinds"]})
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.28 * len(cells)))
    left = [0.0] * len(cells)
    for kind in kinds:
        widths = [100.0 * c["violation_kinds"].get(kind, 0) / c["seeds"] for c in cells]
        ax.barh(names, widths, left=left, label=kind)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    if not kinds:
        ax.barh(names, [0.0] * len(cells))
        ax.text(0.5, 0.5, "no violations", transform=ax.transAxes, ha="center", color="green")
        ax.set_xlim(0, 100)
    ax.invert_yaxis()
    ax.set(title="Seeds that broke an invariant, by first violation", xlabel="% of seeds")
    ax.grid(axis="x", alpha=0.3)
    if kinds:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _svg(fig)


def _label(r: dict[str, Any]) -> str:
    return (
        f"election {r['election_timeout_ms']} / fetch {r['fetch_timeout_ms']} / "
        f"backoff {r['election_backoff_max_ms']}"
    )


def _tuning_plot(g: dict[str, Any]) -> str:
    rows = g["rows"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 1.4 + 0.3 * len(rows)), sharey=True)
    names = [("* " if r["recommended"] else "") + _label(r) for r in rows]
    for ax, key, title in (
        (left, "unavailable_ms", "unavailable ms per seed"),
        (right, "leader_changes", "leader changes per seed"),
    ):
        means = [r[f"{key}_mean"] for r in rows]
        errs = [r[f"{key}_ci"] or 0.0 for r in rows]
        colors = ["#e45756" if r["violating_seeds"] else "#4c78a8" for r in rows]
        ax.errorbar(means, names, xerr=errs, fmt="none", ecolor="#555", capsize=3)
        ax.scatter(means, names, c=colors, zorder=3)
        ax.set(title=f"{title} (mean, 95% CI)")
        ax.grid(axis="x", alpha=0.3)
    left.invert_yaxis()
    return _svg(fig)


def _tuning_html(tuning: list[dict[str, Any]]) -> str:
    if not tuning:
        return "<p>The grid varies no timeout: nothing to tune.</p>"
    parts = [
        "<p>Per fault mix, the settings ranked by mean unavailable time (95% confidence "
        "intervals from the seed counts). Recommended (*): the least unavailable time with no "
        "violation and no more leader changes than the baseline (Kafka's defaults, else the "
        "setting with the fewest), by more than the two intervals combined.</p>"
    ]
    for g in tuning:
        rows = [
            "<tr><th class=l>setting</th><th>seeds</th><th>unavailable ms</th>"
            "<th>leader changes</th><th>violating</th><th class=l>note</th></tr>"
        ]
        for r in g["rows"]:
            note = ", ".join(
                n
                for n, on in (
                    ("recommended", r["recommended"]),
                    ("baseline", r["baseline"]),
                    ("more leader changes", r["extra_leader_changes"]),
                )
                if on
            )
            cls = " class=bad" if r["violating_seeds"] else ""
            rows.append(
                f"<tr{cls}><td class=l>{html.escape(_label(r))}</td><td>{r['seeds']}</td>"
                f"<td>{r['unavailable_ms_mean']:.0f} ± {r['unavailable_ms_ci'] or 0:.0f}</td>"
                f"<td>{r['leader_changes_mean']:.2f} ± {r['leader_changes_ci'] or 0:.2f}</td>"
                f"<td>{r['violating_seeds']}</td><td class=l>{note}</td></tr>"
            )
        parts.append(
            f"<h3>{html.escape(g['group'])}: recommended "
            f"<code>{html.escape(g['recommended'] or 'none')}</code></h3>"
            f"<table class=tuning>{''.join(rows)}</table>"
            f'<div class=plots><img alt="tuning {html.escape(g["group"])}" '
            f'src="{_tuning_plot(g)}"></div>'
        )
    return "\n".join(parts)


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.0f}" if abs(v) >= 100 or v == int(v) else f"{v:.2f}"
    return str(v)


def _pct(cell: dict[str, Any], key: str, i: int) -> str:
    values = cell.get(key)
    return _fmt(values[i]) if values else "-"


def _cells_table(cells: list[dict[str, Any]]) -> str:
    head = (
        "scenario",
        "voters",
        "obs.",
        "seeds",
        "violating",
        "first leader p50/p99 ms",
        "commit p50/p99/max ms",
        "unavailable mean/p99 ms",
        "leader changes mean/max",
        "commits ok/failed",
    )
    rows = [
        "<tr>"
        + "".join(f"<th{' class=l' if i == 0 else ''}>{h}</th>" for i, h in enumerate(head))
        + "</tr>"
    ]
    for c in cells:
        bad = " class=bad" if c["violating_seeds"] else ""
        vals = (
            c["voters"],
            c["observers"],
            c["seeds"],
            c["violating_seeds"],
            f"{_pct(c, 'first_leader_ms', 0)} / {_pct(c, 'first_leader_ms', 2)}",
            " / ".join(_pct(c, "commit_latency_ms", i) for i in (0, 2, 3)),
            f"{_fmt(c['unavailable_ms_mean'])} / {_pct(c, 'unavailable_ms', 2)}",
            f"{_fmt(c['leader_changes_mean'])} / {_pct(c, 'leader_changes', 3)}",
            f"{c['appends_committed']} / {c['appends_failed']}",
        )
        tds = "".join(f"<td>{html.escape(str(v))}</td>" for v in vals)
        rows.append(f"<tr{bad}><td class=l>{html.escape(c['scenario'])}</td>{tds}</tr>")
    return "<table>" + "\n".join(rows) + "</table>"


def _violations_table(agg: dict[str, Any]) -> str:
    listed = agg["violations"]
    if not listed:
        return "<p>No seed broke an invariant.</p>"
    rows = [
        "<tr><th class=l>scenario</th><th>seed</th><th class=l>first violation</th>"
        "<th class=l>detail</th><th class=l>repro</th></tr>"
    ]
    for v in listed:
        rows.append(
            f"<tr class=bad><td class=l>{html.escape(v['scenario'])}</td><td>{v['seed']}</td>"
            f"<td class=l>{html.escape(str(v['kind']))}</td>"
            f"<td class=l>{html.escape(str(v['detail']))}</td>"
            f"<td class=l><code class=repro>{html.escape(v['repro'])}</code></td></tr>"
        )
    more = agg["violating_seeds"] - len(listed)
    note = f"<p>{more} more violating seeds are in the Parquet output.</p>" if more > 0 else ""
    return "<table>" + "\n".join(rows) + "</table>" + note


RUN_COLUMNS = (
    "utc",
    "engine",
    "master",
    "tasks",
    "seeds_run",
    "seeds_skipped",
    "seconds",
    "seeds_per_s",
)


def _runs_table(runs: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{c}</th>" for c in RUN_COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in RUN_COLUMNS) + "</tr>"
        for r in runs
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def render(agg: dict[str, Any], *, name: str, runs: list[dict[str, Any]]) -> str:
    """The whole report as one HTML string."""
    from metaquorum_pipeline.tune import tune

    cells = agg["cells"]
    plots = [
        _violations_plot(cells),
        _cdf_plot(
            cells,
            "first_leader_cdf",
            "Time to the first leader",
            "fraction of seeds ≤ x",
            log=False,
        ),
        _cdf_plot(
            cells,
            "commit_latency_cdf",
            "Commit latency (append to commit)",
            "fraction of commits ≤ x",
            log=True,
        ),
        _bars(cells, "unavailable_ms_mean", "unavailable_ms", "Unavailable time per seed", "ms"),
        _bars(cells, "leader_changes_mean", "leader_changes", "Leader changes per seed", "count"),
    ]
    imgs = "\n".join(f'<img alt="plot {i}" src="{p}">' for i, p in enumerate(plots))
    seeds, bad = agg["seeds"], agg["violating_seeds"]
    verdict = (
        f"<b style='color:#b00'>{bad} of {seeds} seeds broke an invariant</b>"
        if bad
        else f"<b style='color:#070'>all {seeds} seeds kept every invariant</b>"
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>metaquorum campaign {html.escape(name)}</title>
<style>{STYLE}</style></head><body>
<h1>Simulation campaign: {html.escape(name)}</h1>
<p class=summary>{len(cells)} grid cells, {verdict}.</p>
<h2>Violations</h2>
<p>Replay any seed with its repro line (add <code>--trace</code> for the event trace).</p>
{_violations_table(agg)}
<h2>Tuning the timeouts</h2>
{_tuning_html(tune(cells))}
<h2>Per grid cell</h2>
{_cells_table(cells)}
<h2>Plots</h2>
<div class=plots>
{imgs}
</div>
<h2>Runs into this directory</h2>
{_runs_table(runs)}
</body></html>
"""

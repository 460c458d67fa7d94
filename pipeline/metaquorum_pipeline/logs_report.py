"""The figures and the report of `metaquorum-pipeline logs`: Spark SQL over the batch rows.

Role: per log directory and leader epoch (segments only; a snapshot's offsets are its own),
the batches, records, bytes, offsets, first and last timestamps, so the leader's tenure and
append rate, the leader the epoch's LeaderChange names; per log, batch size and records per
batch percentiles, control records by type, invalid bytes; per file, what it holds. Then one
self-contained HTML file with tables and plots.
Invariants: figures come only from valid batches; invalid rows are counted and listed apart;
epochs and logs are ordered; the HTML references nothing outside itself.
"""

from __future__ import annotations

import html
from typing import Any

import matplotlib.pyplot as plt

from metaquorum_pipeline.report import STYLE, _svg  # report.py selects the headless backend

EPOCH_SQL = """
SELECT log, epoch, count(*) AS batches, sum(records) AS records, sum(size) AS bytes,
  min(base_offset) AS first_offset, max(last_offset) AS last_offset,
  min(base_timestamp) AS first_ms, max(max_timestamp) AS last_ms,
  max(leader_id) AS leader_id, sum(CASE WHEN is_control THEN 1 ELSE 0 END) AS control_batches
FROM batches WHERE valid AND kind = 'segment' GROUP BY log, epoch ORDER BY log, epoch
"""
LOG_SQL = """
SELECT log, count(*) AS batches, sum(records) AS records, sum(size) AS bytes,
  percentile(size, array(0.5, 0.9, 0.99, 1.0)) AS batch_bytes,
  percentile(records, array(0.5, 0.9, 0.99, 1.0)) AS batch_records,
  count(DISTINCT epoch) AS epochs
FROM batches WHERE valid AND kind = 'segment' GROUP BY log ORDER BY log
"""
CONTROL_SQL = """
SELECT log, kind, type, count(*) AS records FROM batches
LATERAL VIEW explode(control_types) t AS type WHERE valid GROUP BY log, kind, type
ORDER BY log, kind, type
"""
FILE_SQL = """
SELECT log, file, kind, count(*) AS batches, sum(CASE WHEN valid THEN 0 ELSE 1 END) AS invalid,
  sum(records) AS records, sum(size) AS bytes, min(base_offset) AS first_offset,
  max(last_offset) AS last_offset
FROM batches GROUP BY log, file, kind ORDER BY log, file
"""
INVALID_SQL = """
SELECT log, file, position, size, error FROM batches WHERE NOT valid ORDER BY log, file, position
LIMIT 1000
"""


def aggregates(spark: Any, df: Any) -> dict[str, Any]:
    df.createOrReplaceTempView("batches")

    def rows(sql: str) -> list[dict[str, Any]]:
        return [r.asDict(recursive=True) for r in spark.sql(sql).collect()]

    epochs = rows(EPOCH_SQL)
    for e in epochs:
        span = (e["last_ms"] - e["first_ms"]) if e["first_ms"] is not None else 0
        e["tenure_ms"] = span
        e["records_per_s"] = e["records"] * 1000.0 / span if span > 0 else None
    return {
        "epochs": epochs,
        "logs": rows(LOG_SQL),
        "control": rows(CONTROL_SQL),
        "files": rows(FILE_SQL),
        "invalid": rows(INVALID_SQL),
    }


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    if not rows:
        return "<p>None.</p>"
    head = "".join(
        f"<th{' class=l' if i == 0 else ''}>{html.escape(c)}</th>" for i, c in enumerate(cols)
    )

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.1f}"
        if isinstance(v, list):
            return " / ".join(f"{x:.0f}" for x in v)
        return "-" if v is None else str(v)

    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=l' if i == 0 else ''}>{html.escape(cell(r.get(c)))}</td>"
            for i, c in enumerate(cols)
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _epoch_plot(epochs: list[dict[str, Any]]) -> str:
    logs = sorted({e["log"] for e in epochs})
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    for log in logs:
        mine = [e for e in epochs if e["log"] == log]
        xs = [e["epoch"] for e in mine]
        top.plot(xs, [e["records"] for e in mine], marker="o", label=log)
        bottom.plot(xs, [e["tenure_ms"] / 1000 for e in mine], marker="o", label=log)
    top.set(title="Records appended per leader epoch", ylabel="records")
    bottom.set(title="Leader tenure (first to last batch timestamp)", ylabel="s", xlabel="epoch")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    if len(logs) <= 12:
        top.legend(fontsize=7)
    fig.tight_layout()
    return _svg(fig)


def render(agg: dict[str, Any], *, run: dict[str, Any]) -> str:
    plot = _epoch_plot(agg["epochs"]) if agg["epochs"] else ""
    img = f'<div class=plots><img alt="epochs" src="{plot}"></div>' if plot else ""
    info = ", ".join(f"{k}: {html.escape(str(v))}" for k, v in run.items())
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>metaquorum log analytics</title>
<style>{STYLE}</style></head><body>
<h1>Metadata log analytics</h1>
<p><small>{info}</small></p>
<h2>Per leader epoch</h2>
{img}
{
        _table(
            agg["epochs"],
            [
                "log",
                "epoch",
                "leader_id",
                "batches",
                "records",
                "bytes",
                "first_offset",
                "last_offset",
                "tenure_ms",
                "records_per_s",
                "control_batches",
            ],
        )
    }
<h2>Per log: batch sizes (p50 / p90 / p99 / max)</h2>
{
        _table(
            agg["logs"],
            ["log", "epochs", "batches", "records", "bytes", "batch_bytes", "batch_records"],
        )
    }
<h2>Control records</h2>
{_table(agg["control"], ["log", "kind", "type", "records"])}
<h2>Files</h2>
{
        _table(
            agg["files"],
            [
                "log",
                "file",
                "kind",
                "batches",
                "invalid",
                "records",
                "bytes",
                "first_offset",
                "last_offset",
            ],
        )
    }
<h2>Bytes that are not a valid batch</h2>
{_table(agg["invalid"], ["log", "file", "position", "size", "error"])}
</body></html>
"""

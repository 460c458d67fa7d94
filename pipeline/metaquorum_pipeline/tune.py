"""Tuning: for each fault mix, which `controller.quorum.*` timeouts minimise unavailable time
without extra leader changes — the question a KRaft operator asks before changing them.

Role: read the per-cell aggregates (`aggregate.py`, with means and sample standard deviations)
and, per group of cells that differ only in the three timeouts, rank the settings by mean
unavailable time with 95% confidence intervals (normal approximation, mean ± 1.96·sd/√n),
compare their leader changes with Kafka's defaults (or, without them in the grid, with the
setting that changes leader least), and pick a recommendation.
Invariants: a setting with a violating seed is never recommended; "extra leader changes" means
the difference to the baseline exceeds the two intervals combined (√(a²+b²)), so more seeds make
the verdict sharper, never different in kind; groups and rows are sorted deterministically.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

TIMEOUT_KEYS = ("election.timeout.ms", "fetch.timeout.ms", "election.backoff.max.ms")
KAFKA_DEFAULTS = {
    "election_timeout_ms": 1000,
    "fetch_timeout_ms": 2000,
    "election_backoff_max_ms": 1000,
}
Z95 = 1.96


def group_of(scenario: str) -> str:
    """The cell's scenario name without its timeout overrides: what the settings are tuned for."""
    keys = "|".join(re.escape(k) for k in TIMEOUT_KEYS)
    return re.sub(rf"\+(?:controller\.quorum\.)?(?:{keys})=-?\d+", "", scenario)


def ci95(sd: float | None, n: int) -> float | None:
    if sd is None or n < 2 or math.isnan(sd):
        return None
    return Z95 * sd / math.sqrt(n)


def _setting(cell: dict[str, Any]) -> tuple[int, int, int]:
    return (cell["election_timeout_ms"], cell["fetch_timeout_ms"], cell["election_backoff_max_ms"])


def _more_changes(row: dict[str, Any], base: dict[str, Any]) -> bool:
    a, b = row["leader_changes_ci"] or 0.0, base["leader_changes_ci"] or 0.0
    return bool(row["leader_changes_mean"] - base["leader_changes_mean"] > math.hypot(a, b))


def tune(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per group with at least two settings: its rows and the recommended setting."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for cell in cells:
        groups[group_of(cell["scenario"])].append(cell)
    out = []
    for group, members in sorted(groups.items()):
        if len({_setting(c) for c in members}) < 2:
            continue
        rows = [
            {
                "scenario": c["scenario"],
                "election_timeout_ms": c["election_timeout_ms"],
                "fetch_timeout_ms": c["fetch_timeout_ms"],
                "election_backoff_max_ms": c["election_backoff_max_ms"],
                "seeds": c["seeds"],
                "violating_seeds": c["violating_seeds"],
                "unavailable_ms_mean": c["unavailable_ms_mean"],
                "unavailable_ms_ci": ci95(c.get("unavailable_ms_sd"), c["seeds"]),
                "leader_changes_mean": c["leader_changes_mean"],
                "leader_changes_ci": ci95(c.get("leader_changes_sd"), c["seeds"]),
            }
            for c in members
        ]
        rows.sort(key=lambda r: (r["unavailable_ms_mean"], r["scenario"]))
        defaults = [r for r in rows if all(r[k] == v for k, v in KAFKA_DEFAULTS.items())]
        base = defaults[0] if defaults else min(rows, key=lambda r: r["leader_changes_mean"])
        for r in rows:
            r["baseline"] = r is base
            r["extra_leader_changes"] = _more_changes(r, base)
        fit = [r for r in rows if not r["violating_seeds"] and not r["extra_leader_changes"]]
        best = fit[0] if fit else None
        for r in rows:
            r["recommended"] = r is best
        out.append(
            {
                "group": group,
                "baseline": base["scenario"],
                "rows": rows,
                "recommended": best["scenario"] if best else None,
            }
        )
    return out


def table(tuning: list[dict[str, Any]]) -> str:
    """The tuning as plain text, for the terminal."""
    lines = []
    for g in tuning:
        lines.append(
            f"{g['group']}: recommended {g['recommended'] or 'none'} (baseline {g['baseline']})"
        )
        lines.append(
            "  election fetch backoff   seeds  unavailable ms (95% CI)  leader changes (95% CI)"
        )
        for r in g["rows"]:
            mark = "*" if r["recommended"] else ("+" if r["extra_leader_changes"] else " ")
            bad = f"  {r['violating_seeds']} violating" if r["violating_seeds"] else ""
            lines.append(
                f"{mark} {r['election_timeout_ms']:8} {r['fetch_timeout_ms']:5} "
                f"{r['election_backoff_max_ms']:7} {r['seeds']:7}  "
                f"{r['unavailable_ms_mean']:9.0f} ± {r['unavailable_ms_ci'] or 0:6.0f}      "
                f"{r['leader_changes_mean']:6.2f} ± {r['leader_changes_ci'] or 0:4.2f}{bad}"
            )
    lines.append("* recommended (least unavailable time, no violation, no extra leader changes);")
    lines.append("+ significantly more leader changes than the baseline (Kafka's defaults)")
    return "\n".join(lines)

"""Throughput and availability of a nemesis run, from the clients' history and the nemesis log.

Role: acknowledged appends per second inside fault windows and outside them, the share of
completed operations that were ok, and the longest stretch without an acknowledged append
(how long the quorum was unavailable to writers). Pure; reported, never asserted.
"""

from __future__ import annotations

from typing import Any


def availability(history: list[dict[str, Any]], faults: list[dict[str, Any]]) -> dict[str, float]:
    acks = sorted(op["return"] for op in history if op["f"] == "append" and op["type"] == "ok")
    if not history:
        return {}
    t0 = min(op["call"] for op in history)
    t1 = max(op["return"] for op in history)
    windows: list[tuple[int, int]] = []  # the union of the fault windows (lanes overlap),
    # clipped to the history: a fault held past the clients' last operation covers no calm time
    for a, b in sorted((max(f["start"], t0), min(f["end"], t1)) for f in faults):
        if a >= b:
            continue
        if windows and a <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], b))
        else:
            windows.append((a, b))
    in_fault = sum(1 for t in acks if any(a <= t <= b for a, b in windows))
    fault_s = sum(b - a for a, b in windows) / 1e9
    total_s = (t1 - t0) / 1e9
    calm_s = total_s - fault_s
    gaps = [b - a for a, b in zip([t0, *acks], [*acks, t1], strict=False)]
    done = [op for op in history if op["f"] == "append"]
    out = {
        "acked_appends": len(acks),
        "appends_per_s_in_faults": round(in_fault / fault_s, 1) if fault_s > 0 else 0.0,
        "append_ok_share": round(len(acks) / max(1, len(done)), 3),
        "longest_write_gap_s": round(max(gaps, default=0) / 1e9, 2),
    }
    if calm_s > 0.5:  # no calm stretch (faults the whole run): no calm rate, not a division by ~0
        out["appends_per_s_calm"] = round((len(acks) - in_fault) / calm_s, 1)
    return out

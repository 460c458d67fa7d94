"""The soak's verdicts: resources must not trend upwards, disk must stay bounded, p99 not drift.

Role: from the sample rows (`samples.jsonl`: one row per node per tick, one `client` row per
tick) compute, per check, the measured value, the bound, and pass/fail (docs/soak.md says why
each bound is what it is):
- growth per hour of RSS, open fds and threads: the least-squares slope over the second half
  of the run (after warm-up: the first half, at least `WARMUP_S`), for each node process
  that lived through that whole half (the replaced member's short lives are plotted, not
  fitted); bounds `RSS_BYTES_PER_H`, `FDS_PER_H`, `THREADS_PER_H`;
- disk: every node's data dir, at every sample, at most 3 x segment.bytes + 2 x the largest
  snapshot + `DISK_SLACK` (the segment holding the newest snapshot's offset, the active one, one
  more rolled into before the next snapshot; the newest snapshot and one being written);
- p99 drift: the median of the per-window p99 commit latencies over the last `drift window`
  (an hour, or a third of a shorter run) at most `P99_RATIO` x that of the first (after
  warm-up) + `P99_SLACK_MS`.
Trends are only judged on a run of at least `MIN_JUDGED_S` (a slope over a few minutes is
noise extrapolated to an hour); shorter runs report them as "not judged". Disk is always judged.

Invariants: pure functions of the rows; a check with too few samples is "not judged", never
passed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MIB = 1 << 20
RSS_BYTES_PER_H = 16 * MIB
FDS_PER_H = 10.0
THREADS_PER_H = 2.0
DISK_SLACK = 2 * MIB
P99_RATIO = 1.5
P99_SLACK_MS = 20.0
WARMUP_S = 600.0
MIN_JUDGED_S = 1200.0
MIN_POINTS = 10


@dataclass(frozen=True)
class Verdict:
    check: str
    subject: str
    value: float
    bound: float
    unit: str
    ok: bool | None  # None: not judged
    note: str = ""

    def line(self) -> str:
        state = {True: "ok", False: "FAIL", None: "not judged"}[self.ok]
        return (
            f"{state:10} {self.check:14} {self.subject:22} {self.value:12.2f} "
            f"(bound {self.bound:.2f} {self.unit}) {self.note}"
        ).rstrip()


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (t seconds, value) in value units per hour."""
    ts = [p[0] for p in points]
    vs = [p[1] for p in points]
    return statistics.linear_regression(ts, vs).slope * 3600.0


def _node_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("node") != "client" and r.get("up")]


def growth_verdicts(rows: Sequence[dict[str, Any]], duration_s: float) -> list[Verdict]:
    half = max(duration_s / 2, WARMUP_S)
    out: list[Verdict] = []
    nodes = _node_rows(rows)
    for field, bound, unit, scale in (
        ("rss_bytes", RSS_BYTES_PER_H / MIB, "MiB/h", 1 / MIB),
        ("fds", FDS_PER_H, "fds/h", 1.0),
        ("threads", THREADS_PER_H, "threads/h", 1.0),
    ):
        for nid in sorted({r["node"] for r in nodes}):
            late = [r for r in nodes if r["node"] == nid and r["t"] >= half]
            pids = {r["pid"] for r in late}
            subject = f"node {nid}"
            if duration_s < MIN_JUDGED_S or len(late) < MIN_POINTS:
                out.append(Verdict(field, subject, 0.0, bound, unit, None, "run too short"))
                continue
            if len(pids) != 1 or not _lived_through(rows, nid, next(iter(pids)), half):
                out.append(
                    Verdict(field, subject, 0.0, bound, unit, None, "restarted in the window")
                )
                continue
            slope = slope_per_hour([(r["t"], r[field] * scale) for r in late])
            out.append(Verdict(field, subject, slope, bound, unit, slope <= bound))
    return out


def _lived_through(rows: Sequence[dict[str, Any]], nid: int, pid: int, since: float) -> bool:
    """The process was up at the first sample at or after `since` (not started later)."""
    at = [r for r in rows if r.get("node") == nid and r["t"] >= since]
    return bool(at) and at[0].get("pid") == pid and bool(at[0].get("up"))


def disk_bound(segment_bytes: int, largest_snapshot: int) -> int:
    return 3 * segment_bytes + 2 * largest_snapshot + DISK_SLACK


def disk_verdicts(rows: Sequence[dict[str, Any]], segment_bytes: int) -> list[Verdict]:
    nodes = [r for r in rows if r.get("node") != "client"]
    largest = max((r.get("largest_snapshot_bytes") or 0 for r in nodes), default=0)
    bound = disk_bound(segment_bytes, largest)
    out = []
    for nid in sorted({r["node"] for r in nodes}):
        mine = [r for r in nodes if r["node"] == nid]
        peak = max(r["disk_bytes"] for r in mine)
        cleaned = any((r.get("snapshots") or 0) > 0 for r in mine)
        out.append(
            Verdict(
                "disk",
                f"node {nid}",
                peak / MIB,
                bound / MIB,
                "MiB peak",
                peak <= bound,
                "" if cleaned else "no snapshot taken",
            )
        )
    return out


def p99_verdict(rows: Sequence[dict[str, Any]], duration_s: float) -> Verdict:
    client = [r for r in rows if r.get("node") == "client" and r.get("p99_ms") is not None]
    window = min(3600.0, duration_s / 3)
    first = [r["p99_ms"] for r in client if WARMUP_S <= r["t"] < WARMUP_S + window]
    last = [r["p99_ms"] for r in client if r["t"] >= duration_s - window]
    if duration_s < MIN_JUDGED_S or len(first) < MIN_POINTS or len(last) < MIN_POINTS:
        return Verdict("p99 drift", "client", 0.0, 0.0, "ms", None, "run too short")
    a, b = statistics.median(first), statistics.median(last)
    bound = P99_RATIO * a + P99_SLACK_MS
    note = f"first {window / 60:.0f} min after warm-up: {a:.1f} ms"
    return Verdict("p99 drift", "client", b, bound, "ms (last window)", b <= bound, note)


def judge(rows: Sequence[dict[str, Any]], duration_s: float, segment_bytes: int) -> list[Verdict]:
    return [
        *growth_verdicts(rows, duration_s),
        *disk_verdicts(rows, segment_bytes),
        p99_verdict(rows, duration_s),
    ]


def failed(verdicts: Sequence[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.ok is False]

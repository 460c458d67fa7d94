"""Reading an upgrade's status.versions rows (issue 29): how many pods report a version, and
whether the count moved one pod at a time. Pure functions, shared by the upgrade test and its
unit tests (e2e/test_upgrade_rows.py)."""

from __future__ import annotations

import itertools


def upgraded_counts(rows: list[tuple[tuple[str, str], ...]], version: str) -> list[int]:
    """Per status.versions row, how many pods report `version`. A pod's "?" (the operator had no
    leader to ask while one was elected, or its node did not answer in time) counts as the
    version it last reported: unknown is not a step back."""
    last: dict[str, str] = {}
    out = []
    for row in rows:
        for pod, v in row:
            if v != "?":
                last[pod] = v
        out.append(sum(1 for pod, _ in row if last.get(pod) == version))
    return out


def one_pod_at_a_time(rows: list[tuple[tuple[str, str], ...]], counts: list[int]) -> bool:
    """status.versions moved one pod at a time: the count never falls, and it rises by more than
    one only past a row that left that many pods unknown ("?" or no row: a pod being replaced,
    or one whose node did not answer the operator in time), never between rows that knew all 3."""
    for row, (a, b) in zip(rows, itertools.pairwise(counts), strict=False):
        unknown = 3 - sum(1 for _, v in row if v != "?")
        if b < a or b - a > 1 + unknown:
            return False
    return True

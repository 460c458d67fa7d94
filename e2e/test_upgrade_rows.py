"""Unit tests of e2e/upgrade_rows.py on rows CI saw (no cluster needed)."""

from __future__ import annotations

from upgrade_rows import one_pod_at_a_time, upgraded_counts


def test_upgraded_counts_takes_unknown_as_the_last_version_reported() -> None:
    """The rows status.versions went through in a CI run (a pod's "?" while it started, and
    both followers' "?" while the rolled leader's successor was elected), then the last."""
    o, n = "0.1.0", "0.2.0"
    rows = [
        (("quorum-0", o), ("quorum-1", o), ("quorum-2", o)),
        (("quorum-0", o), ("quorum-1", o)),
        (("quorum-0", o), ("quorum-1", o), ("quorum-2", "?")),
        (("quorum-0", o), ("quorum-2", n)),
        (("quorum-0", o), ("quorum-1", "?"), ("quorum-2", n)),
        (("quorum-1", n), ("quorum-2", n)),
        (("quorum-1", "?"), ("quorum-2", "?")),
        (("quorum-0", n), ("quorum-1", n), ("quorum-2", n)),
    ]
    assert upgraded_counts(rows, n) == [0, 0, 0, 1, 1, 2, 2, 3]


def test_one_pod_at_a_time_allows_a_jump_only_past_unknown_versions() -> None:
    """The rows of a CI run (2026-11-29) where the restarted quorum-1 stayed "?" until the leader
    quorum-0 was rolled too: 0, 1, then 3 known on 0.2.0, allowed; the same jump between rows
    that knew every pod, or a count that falls, is not."""
    o, n = "0.1.0", "0.2.0"
    rows = [
        (("quorum-0", o), ("quorum-1", o), ("quorum-2", o)),
        (("quorum-0", o), ("quorum-1", o)),
        (("quorum-0", o), ("quorum-1", o), ("quorum-2", "?")),
        (("quorum-0", o), ("quorum-1", o), ("quorum-2", n)),
        (("quorum-0", o), ("quorum-2", n)),
        (("quorum-0", o), ("quorum-1", "?"), ("quorum-2", n)),
        (("quorum-1", "?"), ("quorum-2", n)),
        (("quorum-0", n), ("quorum-1", n), ("quorum-2", n)),
    ]
    counts = upgraded_counts(rows, n)
    assert counts == [0, 0, 0, 1, 1, 1, 1, 3]
    assert one_pod_at_a_time(rows, counts)
    known = [rows[0], (("quorum-0", o), ("quorum-1", o), ("quorum-2", n)), rows[-1]]
    assert not one_pod_at_a_time(known, upgraded_counts(known, n))  # 1 -> 3, all known
    back = [rows[-1], rows[0]]
    assert not one_pod_at_a_time(back, upgraded_counts(back, n))  # 3 -> 0

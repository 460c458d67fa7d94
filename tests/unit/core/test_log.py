"""The core's log model against a naive list-of-epochs oracle."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st
from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.log import LogEntry, RaftLog, Snapshot, ValidationKind

epoch_runs = st.lists(st.integers(1, 4), max_size=25).map(sorted)


def build(epochs: list[int]) -> RaftLog:
    return RaftLog([LogEntry(i, e) for i, e in enumerate(epochs)])


def naive_end_for_epoch(epochs: list[int], epoch: int) -> OffsetAndEpoch:
    found = [e for e in epochs if e <= epoch]
    if not found:
        return OffsetAndEpoch(0, 0)
    e = max(found)
    return OffsetAndEpoch(e, max(i for i, x in enumerate(epochs) if x == e) + 1)


@given(epoch_runs, st.integers(0, 6))
def test_end_offset_for_epoch(epochs, epoch):
    assert build(epochs).end_offset_for_epoch(epoch) == naive_end_for_epoch(epochs, epoch)


@st.composite
def leader_and_follower(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """Logs reachable in Raft: each epoch's leader extends a prefix of an earlier leader's log."""
    logs: dict[int, list[int]] = {0: []}
    for e in range(1, 5):
        parent = logs[draw(st.sampled_from(sorted(logs)))]
        base = parent[: draw(st.integers(0, len(parent)))]
        logs[e] = base + [e] * draw(st.integers(0, 4))
    a = draw(st.integers(1, 4))
    b = draw(st.integers(0, a))
    follower = logs[b][: draw(st.integers(0, len(logs[b])))]
    return logs[a], follower


@given(leader_and_follower())
def test_validate_then_truncate_reaches_common_prefix(logs):
    leader_epochs, follower_epochs = logs
    leader, follower = build(leader_epochs), build(follower_epochs)
    # The fetch loop: validate, truncate on divergence, repeat; it must terminate at a prefix
    # of the leader's log (log matching) without cutting the longest common prefix.
    common = 0
    while (
        common < min(len(leader_epochs), len(follower_epochs))
        and leader_epochs[common] == follower_epochs[common]
    ):
        common += 1
    for _ in range(30):
        res = leader.validate_offset_and_epoch(follower.end_offset, follower.last_fetched_epoch)
        if res.kind is ValidationKind.VALID:
            break
        follower.truncate_to(follower.truncation_offset_for(res.offset_and_epoch))
    else:
        raise AssertionError("fetch loop did not converge")
    n = follower.end_offset
    assert n >= common
    assert [e.epoch for e in follower.entries()] == leader_epochs[:n]


def test_truncate_and_flush_bookkeeping():
    log = build([1, 1, 2, 2, 3])
    log.mark_flushed(3)
    log.truncate_to(2)
    assert log.end_offset == 2 and log.flushed_offset == 2 and log.last_fetched_epoch == 1
    log.mark_flushed(99)
    assert log.flushed_offset == 2
    log.append([LogEntry(2, 4)])
    assert log.epoch_starts == ((1, 0), (4, 2))


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []

    def on_append(self, entries: Sequence[LogEntry]) -> None:
        self.events.append(("append", tuple(e.offset for e in entries)))

    def on_truncate(self, end_offset: int) -> None:
        self.events.append(("truncate", end_offset))

    def on_snapshot(self, snapshot: Snapshot, installed: bool) -> None:
        self.events.append(("snapshot", snapshot.snapshot_id.offset, installed))


def test_log_change_hook_sees_every_append_truncation_and_snapshot() -> None:
    """Issue 13: the one hook where the voter-set history (KIP-853) will be fed, in log order."""
    log = RaftLog([LogEntry(0, 1)])
    rec = _Recorder()
    log.listeners.append(rec)
    log.append([LogEntry(1, 1), LogEntry(2, 2)])
    log.truncate_to(2)
    log.truncate_to(5)  # beyond the end: no change, no event
    log.append([LogEntry(2, 3)])
    log.create_snapshot(2, b"s")
    log.install_snapshot(Snapshot(OffsetAndEpoch(3, 7), b"t"))
    assert rec.events == [
        ("append", (1, 2)),
        ("truncate", 2),
        ("append", (2,)),
        ("snapshot", 2, False),
        ("snapshot", 7, True),
    ]

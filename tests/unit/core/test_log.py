"""The core's log model against a naive list-of-epochs oracle."""

from __future__ import annotations

import gc
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st
from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.log import (
    LogEntry,
    RaftLog,
    Snapshot,
    ValidationKind,
    leader_change_message,
)

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


# --- entries kept as bytes (round 14: no GC-tracked object per data entry) -------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 2), st.integers(1, 4), st.booleans()),
        st.tuples(st.just("truncate"), st.integers(0, 30)),
        st.tuples(st.just("delete_before"), st.integers(0, 30)),
    ),
    max_size=30,
)


@given(ops, st.integers(0, 40), st.integers(0, 12))
def test_entries_read_back_as_appended_across_epochs_truncations_and_prefix_deletes(
    steps, offset, count
):
    """Oracle: a plain list of the LogEntry objects appended. Data entries are stored as bytes
    and rebuilt; a rebuilt entry must equal the appended one (offset, epoch, value, kind)."""
    log = RaftLog()
    model: list[LogEntry] = []  # model[i] is the entry at offset log.start_offset + i
    for step in steps:
        if step[0] == "append":
            _, bump, n, control = step
            epoch = max(log.last_fetched_epoch, 1) + bump
            new: list[LogEntry] = []
            for k in range(n):
                o = log.end_offset + k
                if control and k == 0:
                    new.append(leader_change_entry(o, epoch))
                else:
                    new.append(LogEntry(o, epoch, b"v%d-%d" % (o, epoch)))
            log.append(new)
            model.extend(new)
        elif step[0] == "truncate":
            at = max(step[1], log.start_offset)
            log.truncate_to(at)
            del model[at - log.start_offset :]
        else:
            start = log.start_offset
            at = min(step[1], log.end_offset)
            log.delete_before(at)
            del model[: max(0, at - start)]
    assert list(log.entries()) == model
    for i, e in enumerate(model):
        assert log.entry(log.start_offset + i) == e
        assert log.epoch_at(log.start_offset + i) == e.epoch
    lo = max(offset, log.start_offset) - log.start_offset
    assert log.read(offset, count) == model[lo : lo + count]


def leader_change_entry(offset: int, epoch: int) -> LogEntry:
    return LogEntry.of_control(offset, epoch, leader_change_message(1, [1, 2, 3], [1]))


def test_data_entries_add_no_gc_tracked_object_to_the_log() -> None:
    """A long log must not lengthen the cyclic GC's full collections (50-150 ms pauses every
    few seconds at 20,000 records/s when each entry stayed a LogEntry object)."""
    log = RaftLog()
    gc.collect()
    before = len(gc.get_objects())
    log.append([LogEntry(o, 1 + o // 5_000, b"x" * 100) for o in range(20_000)])
    gc.collect()
    assert len(gc.get_objects()) - before < 200
    assert log.entry(12_345) == LogEntry(12_345, 3, b"x" * 100)

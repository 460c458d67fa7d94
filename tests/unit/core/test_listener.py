"""The listener API: committed batches in order, exactly once; leader changes as Kafka does."""

from __future__ import annotations

from metaquorum.core.listener import Batch, LeaderAndEpoch, ListenerDispatcher, to_batches
from metaquorum.core.log import EntryKind, LogEntry
from metaquorum.core.states import ElectionState

from tests.unit.core.context import RaftTestContext, entries, fetch_request, fetch_response


class Recorder:
    def __init__(self) -> None:
        self.commits: list[Batch] = []
        self.leaders: list[LeaderAndEpoch] = []

    def handle_commit(self, batch: Batch) -> None:
        self.commits.append(batch)

    def handle_load_snapshot(self, reader: object) -> None:
        raise AssertionError("no snapshots yet")

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leaders.append(leader)


def test_to_batches_groups_by_epoch_and_kind() -> None:
    log = [
        LogEntry(0, 1, b"", EntryKind.LEADER_CHANGE),
        LogEntry(1, 1, b"a"),
        LogEntry(2, 1, b"b"),
        LogEntry(3, 2, b"", EntryKind.LEADER_CHANGE),
        LogEntry(4, 2, b"c"),
    ]
    batches = to_batches(log)
    assert [(b.base_offset, b.last_offset, b.epoch, b.control) for b in batches] == [
        (0, 0, 1, True),
        (1, 2, 1, False),
        (3, 3, 2, True),
        (4, 4, 2, False),
    ]


def test_follower_listener_gets_each_committed_offset_once_in_order() -> None:
    ctx = RaftTestContext(2, [1, 2, 3], election=ElectionState(3, 1, None))
    rec = Recorder()
    disp = ListenerDispatcher(rec, local_id=2)
    disp.on_step(ctx.effects, ctx.node.log, ctx.node.state)
    assert rec.leaders == [LeaderAndEpoch(1, 3)]
    ctx.respond(1, fetch_response(1, 3, hw=2), entries(0, [3, 3, 3]))
    disp.on_step(ctx.effects, ctx.node.log, ctx.node.state)
    assert [(b.base_offset, b.records) for b in rec.commits] == [(0, (b"x0", b"x1"))]
    ctx.flush()
    ctx.respond(1, fetch_response(1, 3, hw=3))
    disp.on_step(ctx.effects, ctx.node.log, ctx.node.state)
    ctx.respond(1, fetch_response(1, 3, hw=3))
    disp.on_step(ctx.effects, ctx.node.log, ctx.node.state)
    assert [b.base_offset for b in rec.commits] == [0, 2]


def test_leader_is_announced_to_its_own_listener_only_after_catching_up() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    rec = Recorder()
    disp = ListenerDispatcher(rec, local_id=1)
    ctx.watchers.append(lambda c: disp.on_step(c.effects, c.node.log, c.node.state))
    ctx.become_leader()  # epoch 2 starts at offset 2
    assert rec.leaders == []  # offsets 0-1 not delivered yet: not announced
    e = ctx.node.epoch
    ctx.request(2, fetch_request(2, e, 3, e))
    assert [b.base_offset for b in rec.commits] == [0, 2]
    assert rec.leaders == [LeaderAndEpoch(1, e)]

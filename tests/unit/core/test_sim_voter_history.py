"""The simulator's invariant checker takes the voter set as of an offset (issue 13), so the
`hw-majority-flushed` check will count the right majority once KIP-853 changes voters."""

from __future__ import annotations

from metaquorum.core.voter_set import VoterSet, VoterSetHistory
from metaquorum.sim.disk import MemoryDisk
from metaquorum.sim.invariants import InvariantChecker

from tests.unit.core.context import RaftTestContext


def _disks(ctx: RaftTestContext, holders: set[int], ids: range) -> dict[int, MemoryDisk]:
    disks = {}
    for n in ids:
        d = MemoryDisk()
        if n in holders:
            d.append(tuple(ctx.node.log.entries()))
            d.flush(ctx.node.log.end_offset)
        disks[n] = d
    return disks


def test_hw_majority_uses_the_voter_set_of_the_offset() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()  # entries 0..2, the LeaderChange at 2
    disks = _disks(ctx, {1, 2}, range(1, 6))

    static = InvariantChecker(frozenset({1, 2, 3}))
    static.on_high_watermark(1, ctx.node, 3, disks)
    assert static.violations == []  # 2 of 3 voters hold offset 2

    history = VoterSetHistory(VoterSet.of([1, 2, 3]))
    history.add_at(2, VoterSet.of([1, 2, 3, 4, 5]))  # five voters from offset 2 on
    grown = InvariantChecker(history)
    assert grown.voters_at(1) == frozenset({1, 2, 3})
    assert grown.voters == frozenset({1, 2, 3, 4, 5})
    grown.on_high_watermark(1, ctx.node, 3, disks)
    assert [v.kind for v in grown.violations] == ["hw-majority-flushed"]  # 2 of 5 is no majority

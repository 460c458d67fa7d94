"""The simulated state machine's snapshots (KIP-630): when a replica snapshots, and what.

Role: the state machine is the list of committed records. Each replica snapshots its committed
prefix when `snapshot_every` committed entries follow its last snapshot (`on_high_watermark`),
at an offset up to `snapshot_lag_max` below the HW (a state machine applying behind the HW);
`create` builds the snapshot's bytes there, with the kraft.version and voter set that the
replica's core picks for that offset (`core/snapshot_membership.py`, the function the runtime's
`SnapshotPolicy` runs) and hands the core `CreateSnapshot`. The simulator checks every written
or installed snapshot against a scan of the committed prefix (`snapshot-consistent`).
Invariants: only the committed prefix is offered (the core refuses anything else anyway); all
randomness comes from `World.rng`, in the simulator's order.
"""

from __future__ import annotations

from metaquorum.core.events import CreateSnapshot
from metaquorum.core.node import RaftNode
from metaquorum.core.rng import randint
from metaquorum.core.snapshot_membership import snapshot_membership
from metaquorum.sim.snapshots import committed_snapshot
from metaquorum.sim.surface import Kind, World


def on_high_watermark(world: World, nid: int, node: RaftNode, hw: int) -> None:
    """Queue a snapshot of replica `nid` when enough committed entries follow its last one."""
    p = world.params
    every = p.snapshot_every
    snap = node.log.snapshot
    done = 0 if snap is None else snap.snapshot_id.offset
    if every and hw - done >= every:
        end = hw - (randint(world.rng, 0, p.snapshot_lag_max) if p.snapshot_lag_max else 0)
        world.push(world.now, Kind.SNAPSHOT, nid, (world.incarnation[nid], max(end, done + 1)))


def create(world: World, nid: int, data: tuple[int, int]) -> None:
    """The queued snapshot of replica `nid` below `end`, if that incarnation still runs."""
    inc, end = data
    node = world.nodes[nid]
    if inc != world.incarnation[nid] or node is None:
        return
    membership = snapshot_membership(node.control, end) if end <= node.log.end_offset else None
    checker = world.checker
    payload = committed_snapshot(checker.committed, end, membership, checker.snapshot_data)
    if payload is not None:
        world.step(nid, CreateSnapshot(end, payload))

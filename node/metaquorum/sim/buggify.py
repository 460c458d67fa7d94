"""Faults at the worst moments (FoundationDB's "buggify"; issue 14), and how often those
moments arise.

Role: after each step the simulator reports what just happened to `observe`; in a run with
`buggify > 0` each such moment crashes the replica with that probability (during the fault
phase; it restarts on its data 200-2,000 ms later), on top of the random fault mix:
- `vote-persisted`: it wrote a granted vote (the reply may be on the wire);
- `append-unflushed`: it appended entries that are not flushed yet;
- `leader-voter-change`: a leader appended a VotersRecord that changes the membership;
- `snapshot-written`: it wrote or installed a snapshot.
Every moment is counted whether or not it crashes (`sim.situations`): a moment the mixes never
produce is a bug the simulator cannot catch, so the counts go in the reach table (sim/reach.py).
A run may aim its crashes at some moments only (`buggify_moments`, e.g. `vote-persisted` with a
quick restart: the case vote persistence exists for), and may cut a leader that just appended
another voter's removal off from the remaining voters (`cut_after_removal`: the fault that
shows a leader still counting the removed voter's fetches for check-quorum; the
`cut-leader` fault of sim/faults.py).
Invariant: all randomness comes from the simulation's RNG (a seed reproduces the run).
"""

from __future__ import annotations

from typing import Protocol

from metaquorum.core.effects import (
    AppendEntries,
    InstallSnapshot,
    PersistElectionState,
    Step,
    WriteSnapshot,
)
from metaquorum.core.log import EntryKind
from metaquorum.core.node import RaftNode
from metaquorum.core.rng import randint
from metaquorum.core.states import LeaderState
from metaquorum.sim.surface import Kind, World


class Crashable(World, Protocol):
    """The `World` (sim/surface.py), plus the counts of moments and a crash."""

    @property
    def situations(self) -> dict[str, int]: ...

    def crash(self, nid: int) -> None: ...


def moments(node: RaftNode, step: Step) -> list[str]:
    found: list[str] = []
    for eff in step.effects:
        if isinstance(eff, PersistElectionState) and eff.election.voted_key is not None:
            if eff.election.voted_key.id != node.local_id:
                found.append("vote-persisted")
        elif isinstance(eff, AppendEntries):
            found.append("append-unflushed")
            opening = any(e.kind is EntryKind.LEADER_CHANGE for e in eff.entries)
            if (
                isinstance(node.state, LeaderState)
                and not opening
                and any(e.kind is EntryKind.KRAFT_VOTERS for e in eff.entries)
            ):
                found.append("leader-voter-change")
        elif isinstance(eff, WriteSnapshot | InstallSnapshot):
            found.append("snapshot-written")
    return found


def removes_another_voter(nid: int, node: RaftNode) -> bool:
    """Did leader `nid` just append a VotersRecord removing a voter other than itself?"""
    control = node.control
    at = control.latest_voters_offset()
    before, after = control.voters_at(at - 1).voter_ids, control.voters_at(at).voter_ids
    return after < before and nid in after


def observe(sim: Crashable, nid: int, node: RaftNode, step: Step) -> None:
    found = moments(node, step)
    if not found:
        return
    for m in found:
        sim.situations[m] = sim.situations.get(m, 0) + 1
    p = sim.params
    if sim.now >= p.fault_end_ms or sim.nodes[nid] is None:
        return
    if (
        p.cut_after_removal > 0
        and "leader-voter-change" in found
        and removes_another_voter(nid, node)
        and sim.rng.random() < p.cut_after_removal
    ):
        sim.push(sim.now, Kind.FAULT, 0, ("cut-leader", nid, randint(sim.rng, *p.cut_ms)))
    if p.buggify_moments:
        found = [m for m in found if m in p.buggify_moments]
    if p.buggify <= 0 or not found:
        return
    if sim.rng.random() < p.buggify:
        sim.record(f"{sim.now} buggify {nid} {found[-1]}\n")
        sim.situations["crashed-at-" + found[-1]] = (
            sim.situations.get("crashed-at-" + found[-1], 0) + 1
        )
        sim.crash(nid)
        restart = randint(sim.rng, *p.buggify_restart_ms)
        sim.push(sim.now + restart, Kind.FAULT, 0, ("restart", nid))

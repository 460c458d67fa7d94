"""Fault injection and the end-of-run liveness checks of a simulation.

Role: turn a `FaultMix` into timed faults (isolation, one-way cuts, minority splits, crashes
that lose unflushed data and may tear the last write, crashes of the current leader, pauses,
disk wipes, fsync errors that stop the replica at its next flush as the runtime's fail-stop
does), apply the targeted ones others queue (`cut-leader` from sim/buggify.py: the leader cut
off from its remaining voters right after a removal; `move` from sim/membership.py: a voter
restarted at another address), heal everything at
`fault_end_ms`, and check liveness afterwards: within `liveness_bound_ms` a leader exists,
the HW advanced after the heal (when there is a workload), and every replica converged to the
leader's log and HW. The `stable_leadership` mix is KIP-996's check: a voter cut off from the
leader alone must not change the leader while a majority still hears it.
It reaches the simulation through `FaultTarget`: the `World` (sim/surface.py) plus the
machinery it breaks (network, disks, pauses, crash and boot) and the membership state a wipe
changes.
"""

from __future__ import annotations

from typing import Protocol

from metaquorum.core.rng import randbelow, randint
from metaquorum.core.states import LeaderState
from metaquorum.sim.disk import MemoryDisk
from metaquorum.sim.membership import Membership
from metaquorum.sim.network import Network
from metaquorum.sim.surface import Kind, World
from metaquorum.sim.workload import ClientWorkload

FAULT = Kind.FAULT


class FaultTarget(World, Protocol):
    """What the fault injector may read and break, beyond the `World`."""

    @property
    def voter_ids(self) -> list[int]: ...

    @property
    def kraft1(self) -> bool: ...

    @property
    def net(self) -> Network: ...

    @property
    def disks(self) -> dict[int, MemoryDisk]: ...

    @property
    def paused_until(self) -> dict[int, int]: ...

    @property
    def disk_failing(self) -> dict[int, int]:
        """node -> how long it stays down once its next fsync fails"""
        ...

    @property
    def membership(self) -> Membership: ...

    @property
    def workload(self) -> ClientWorkload: ...

    @property
    def notes(self) -> list[str]: ...

    @property
    def situations(self) -> dict[str, int]:
        """The worst moments reached (sim/reach.py)"""
        ...

    @property
    def fsync_errors(self) -> int: ...

    @fsync_errors.setter
    def fsync_errors(self, value: int) -> None: ...

    def boot(self, nid: int) -> None: ...

    def crash(self, nid: int) -> None: ...


def schedule_faults(sim: FaultTarget) -> None:
    p = sim.params
    mix = p.mix
    if mix.stable_leadership:
        sim.push(5000, FAULT, 0, ("stable-start",))
        sim.push(p.fault_end_ms, FAULT, 0, ("heal",))
        return
    weights = mix.weights()
    if not weights:
        sim.push(p.fault_end_ms, FAULT, 0, ("heal",))
        return
    total = sum(w for _, w in weights)
    t = 0
    rng = sim.rng
    while True:
        t += randint(rng, mix.interval_ms // 2, mix.interval_ms * 3 // 2)
        if t >= p.fault_end_ms:
            break
        r = randbelow(rng, total)
        kind = weights[-1][0]
        for name, w in weights:
            if r < w:
                kind = name
                break
            r -= w
        duration = randint(rng, mix.duration_min_ms, mix.duration_max_ms)
        sim.push(t, FAULT, 0, (kind, duration))
    sim.push(p.fault_end_ms, FAULT, 0, ("heal",))


def apply_fault(sim: FaultTarget, data: tuple[object, ...]) -> None:
    kind = data[0]
    rng = sim.rng
    now = sim.now
    end = sim.params.fault_end_ms
    ids = sim.all_ids
    sim.record(f"{now} fault {data}\n")
    if kind == "heal":
        sim.net.heal()
        sim.disk_failing.clear()
        for nid in ids:
            sim.paused_until[nid] = min(sim.paused_until[nid], now)
            if sim.nodes[nid] is None:
                sim.boot(nid)
        return
    if kind == "unblock":
        links = data[1]
        assert isinstance(links, frozenset)
        sim.net.blocked -= links
        return
    if kind == "restart":
        target = data[1]
        assert isinstance(target, int)
        if sim.nodes[target] is None and now < end:
            sim.boot(target)
        return
    if kind == "move":  # sim/membership.py: a voter restarts at another address
        target, down = data[1], data[2]
        assert isinstance(target, int) and isinstance(down, int)
        if sim.nodes[target] is not None and now < end:
            sim.membership.moved[target] += 1
            sim.situations["endpoint-moved"] = sim.situations.get("endpoint-moved", 0) + 1
            sim.crash(target)
            sim.push(now + down, FAULT, 0, ("restart", target))
        return
    if kind == "cut-leader":  # sim/buggify.py: right after it appended a voter's removal
        leader, duration = data[1], data[2]
        assert isinstance(leader, int) and isinstance(duration, int)
        node = sim.nodes[leader]
        if node is None or not isinstance(node.state, LeaderState):
            return
        before = set(sim.net.blocked)
        for v in node.voters.voter_ids - {leader}:
            sim.net.cut(leader, v)
            sim.net.cut(v, leader)
        added = frozenset(sim.net.blocked - before)
        if added:
            sim.situations["leader-cut-after-removal"] = (
                sim.situations.get("leader-cut-after-removal", 0) + 1
            )
            sim.push(now + min(duration, max(0, end - now)), FAULT, 0, ("unblock", added))
        return
    if kind == "stable-start":
        leader = sim.current_leader()
        if leader is None:
            sim.notes.append("stable-leadership: no leader at 5 s; window skipped")
            return
        others = [v for v in sim.voter_ids if v != leader]
        x = others[randbelow(rng, len(others))]
        sim.net.cut(leader, x)
        sim.net.cut(x, leader)
        node = sim.nodes[leader]
        assert node is not None
        sim.push(end - 1, FAULT, 0, ("stable-check", leader, node.epoch))
        return
    if kind == "stable-check":
        was_leader, epoch = data[1], data[2]
        assert isinstance(was_leader, int) and isinstance(epoch, int)
        epochs = {n: node.epoch for n, node in sim.nodes.items() if node is not None}
        if max(epochs.values()) != epoch or sim.current_leader() != was_leader:
            sim.checker.fail(
                "stable-leadership",
                f"leader {was_leader} of epoch {epoch} lost its place (epochs {epochs})",
            )
        return
    assert isinstance(data[1], int)
    duration = min(data[1], max(0, end - now))
    victim = ids[randbelow(rng, len(ids))]
    if kind == "crash_leader":
        victim = sim.current_leader() or victim
        kind = "crash"
    before = set(sim.net.blocked)
    if kind == "isolate":
        sim.net.isolate(victim, ids)
    elif kind == "one_way":
        other = ids[randbelow(rng, len(ids))]
        if other != victim:
            sim.net.cut(victim, other)
    elif kind == "split":
        shuffled = list(ids)
        rng.shuffle(shuffled)
        minority = shuffled[: max(1, (len(sim.voter_ids) - 1) // 2)]
        sim.net.split(minority, [n for n in ids if n not in minority])
    elif kind == "crash":
        if sim.nodes[victim] is not None:
            sim.crash(victim)
            sim.push(now + duration, FAULT, 0, ("restart", victim))
        return
    elif kind == "wipe":
        if sim.nodes[victim] is not None:
            sim.crash(victim)
            # KIP-853 runs: the operator replaces a lost disk before another voter loses its
            # own, so a wipe that would leave no majority of intact voters is a crash instead.
            if not sim.kraft1 or sim.membership.wipe_keeps_majority(victim):
                sim.disks[victim].wipe()
                if sim.kraft1:  # a new disk is a new directory: the replica is a new one
                    sim.membership.replace_disk(victim)
            sim.push(now + duration, FAULT, 0, ("restart", victim))
        return
    elif kind == "disk_fail":
        if sim.nodes[victim] is not None:
            sim.disk_failing[victim] = duration
        return
    elif kind == "pause":
        sim.paused_until[victim] = max(sim.paused_until[victim], now + duration)
        return
    added = frozenset(sim.net.blocked - before)
    if added:
        sim.push(now + duration, FAULT, 0, ("unblock", added))


def fsync_failed(sim: FaultTarget, nid: int, down_ms: int) -> None:
    """The runtime's fail-stop (issue 12): an fsync error stops the replica before any
    `Flushed`; what was not flushed may be gone (as in a crash). It restarts on its data
    after `down_ms` (the disk repaired or the pod rescheduled)."""
    sim.fsync_errors += 1
    sim.record(f"{sim.now} fsync-error {nid}\n")
    sim.crash(nid)
    if sim.now < sim.params.fault_end_ms:
        sim.push(sim.now + down_ms, FAULT, 0, ("restart", nid))


def final_checks(sim: FaultTarget) -> None:
    """Liveness after the faults stopped (all replicas up, network healed)."""
    p = sim.params
    checker = sim.checker
    leader = sim.current_leader()
    if sim.kraft1:
        sim.membership.final_checks(None if leader is None else sim.nodes[leader])
    if leader is None:
        checker.fail("liveness", f"no leader {p.liveness_bound_ms} ms after the faults stopped")
        return
    lnode = sim.nodes[leader]
    assert lnode is not None and isinstance(lnode.state, LeaderState)
    if p.append_interval_ms > 0 and sim.workload.last_commit_ms < p.fault_end_ms:
        checker.fail("liveness", "no append committed after the faults stopped")
    hw = lnode.high_watermark
    for nid, node in sim.nodes.items():
        if node is None:
            checker.fail("liveness", f"node {nid} is down at the end")
            continue
        if node.log.end_offset != lnode.log.end_offset or node.high_watermark != hw:
            checker.fail(
                "liveness",
                f"node {nid} not caught up: LEO {node.log.end_offset} HW {node.high_watermark}, "
                f"leader {leader} LEO {lnode.log.end_offset} HW {hw}",
            )
        elif node.log.end_offset_and_epoch() != lnode.log.end_offset_and_epoch():
            checker.fail("liveness", f"node {nid} log differs from the leader's")

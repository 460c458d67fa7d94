"""Hypothesis properties of the planner and step loop over random histories (world.py).

A history interleaves spec changes (scale 1..5, a config change), faults (a pod killed, a disk
lost), leadership moves and unanswered voter changes with runs of the operator. Throughout: the
operator never sends a voter change while another is uncommitted, never makes a voter change or
deletes a pod when the voter set would be left without a caught-up majority, never deletes the
pod of the current leader of a quorum of two or more (it resigns first), and once the faults
stop it converges to the spec with every voter on its pod's current directory. Separately, a plan
made from a stale observation with a change pending never issues a different voter change.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metaquorum_operator import planner
from metaquorum_operator.membership import PendingChange
from metaquorum_operator.observed import VoterKey

from tests.unit.operator.test_planner import Driver, converged, desired
from tests.unit.operator.world import World


class Checked(World):
    """The world, recording every unsafe or concurrent change the operator makes."""

    violations: list[str]

    def change(self, action: planner.AddVoter | planner.RemoveVoter) -> None:
        if self.uncommitted is not None:
            self.violations.append(f"{action} while {self.uncommitted} is uncommitted")
        after = self.voter_set()
        if isinstance(action, planner.AddVoter):
            after[action.key.id] = action.key.directory_id
        else:
            after.pop(action.key.id, None)
        if not self.up_majority(after):
            self.violations.append(f"{action} leaves no caught-up majority of {after}")
        super().change(action)

    def apply(self, action: planner.Action) -> None:
        if isinstance(action, planner.DeletePod):
            i = int(action.name.rsplit("-", 1)[1])
            vs = self.voter_set()
            up = sum(
                1 for j, d in vs.items() if j != i and (self.caught_up(j, d) or j == self.leader)
            )
            others = len(vs) - (1 if i in vs else 0)
            if (2 * up <= len(vs)) if len(vs) > 2 else up < others:
                self.violations.append(f"{action} leaves {up} of {len(vs)} voters up")
            # a roll deletes a leader's pod only once it has resigned (another voter leads)
            if i == self.leader and len(vs) > 1:
                self.violations.append(f"{action} deletes the pod of leader {i} of {sorted(vs)}")
        super().apply(action)


def quiet(world: World) -> bool:
    """One fault at a time, where the quorum tolerates one: at least 3 voters, all caught up, no
    change open (a 1- or 2-voter quorum that loses a disk has no majority left to repair it)."""
    vs = world.voters
    return (
        world.uncommitted is None
        and len(vs) >= 3
        and all(world.caught_up(i, d) for i, d in vs.items())
    )


ops = st.lists(
    st.one_of(
        st.tuples(st.just("scale"), st.integers(1, 5)),
        st.tuples(st.just("kill"), st.integers(0, 4)),
        st.tuples(st.just("lose_disk"), st.integers(0, 4)),
        st.tuples(st.just("stop"), st.tuples(st.integers(0, 4), st.integers(1, 12))),
        st.tuples(st.just("leader"), st.integers(0, 4)),
        st.tuples(st.just("ack"), st.booleans()),
        st.tuples(st.just("config"), st.integers(1000, 1003)),
        st.tuples(st.just("run"), st.integers(1, 4)),
    ),
    max_size=10,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.integers(1, 5), st.integers(0, 5))
def test_random_histories_are_safe_and_converge(
    history: list[tuple[str, Any]], final: int, commit_delay: int
) -> None:
    world = Checked(commit_delay=commit_delay)
    world.violations = []
    d = Driver(world)
    d.until(desired(3))
    replicas, cfg = 3, 1000
    for op, arg in history:
        if op == "scale":
            replicas = arg
        elif op == "config":
            cfg = arg
        elif op == "ack":
            world.ack = arg
        elif op == "leader":
            vs = world.voter_set()
            if arg in vs and world.caught_up(arg, vs[arg]):
                world.leader, world.epoch = arg, world.epoch + 1
        elif op in ("kill", "lose_disk") and quiet(world) and arg in world.pods:
            getattr(world, op)(arg)
        elif op == "stop" and quiet(world) and arg[0] in world.pods:
            world.stop(*arg)
        want = desired(replicas, config={"controller.quorum.fetch.timeout.ms": str(cfg)})
        for _ in range(arg if op == "run" else 2):
            d.run(want)
        assert not world.violations, world.violations
    world.ack = True
    want = desired(final, config={"controller.quorum.fetch.timeout.ms": str(cfg)})
    d.until(want, limit=150)
    assert not world.violations, world.violations
    converged(world, want)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.data())
def test_a_stale_observation_with_a_change_pending_never_starts_another(
    history: list[tuple[str, Any]], data: st.DataObject
) -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    seen = []
    replicas = 3
    for op, arg in history:
        if op == "scale":
            replicas = arg
        elif op in ("kill", "lose_disk") and quiet(world) and arg in world.pods:
            getattr(world, op)(arg)
        d.run(desired(replicas))
        seen.append((world.observe(), world.describe().quorum))
    if not seen:
        return
    observed, quorum = data.draw(st.sampled_from(seen))
    key = VoterKey(data.draw(st.integers(0, 5)), data.draw(st.sampled_from(["", "A", "B"])))
    pending = PendingChange(data.draw(st.sampled_from(["add", "remove"])), key, issued_ms=0)
    progress = dataclasses.replace(d.progress, pending=pending)
    action = planner.plan(desired(data.draw(st.integers(1, 5))), observed, quorum, progress)
    if isinstance(action, planner.VOTER_CHANGES):
        assert action.key == key
        assert isinstance(action, planner.AddVoter) == (pending.kind == "add")
    assert not isinstance(action, (planner.DeletePod, planner.ScaleStatefulSet))

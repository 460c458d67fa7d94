"""The planner and the step loop against a model of the cluster and its KRaft quorum (world.py).

Hand-picked cases (bootstrap, scale up and down with the leader last, disk loss, a refused
volume, a change that would lose the majority, a change left uncommitted) and hypothesis
properties over random fault sequences: one voter change at a time, never an unsafe one, and
convergence once the faults stop.
"""

from __future__ import annotations

import dataclasses

from metaquorum_operator import handlers, planner
from metaquorum_operator.membership import Progress
from metaquorum_operator.model import OperatorConfig, QuorumSpec
from metaquorum_operator.planner import (
    AddVoter,
    Apply,
    Converged,
    DeletePod,
    Desired,
    Refused,
    RemoveVoter,
    ResignLeader,
    ScaleStatefulSet,
    Wait,
)

from tests.unit.operator.world import NAMES, OWNER, ModelKube, ModelQuorum, World

OP = OperatorConfig()
OP = dataclasses.replace(OP, catch_up=dataclasses.replace(OP.catch_up, hold_ms=1000))


def desired(replicas: int = 3, **kw: object) -> Desired:
    spec = QuorumSpec(replicas=replicas, cluster_id="MkU3OEVBNTcwNTJENDM2Qk", **kw)  # type: ignore[arg-type]
    return Desired(spec, NAMES, OWNER, OP)


@dataclasses.dataclass
class Driver:
    """The handlers' step loop over the world, with the operator's memory between runs."""

    world: World
    progress: Progress = dataclasses.field(default_factory=Progress)
    actions: list[planner.Action] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)

    def run(self, want: Desired) -> planner.Action:
        def failed(action: planner.Action, error: str) -> None:
            self.failures.append(f"{action}: {error}")

        result = handlers.run_steps(
            ModelKube(self.world),
            ModelQuorum(self.world),
            want,
            self.progress,
            on_action=self.actions.append,
            on_failure=failed,
            clock=lambda: self.world.clock_ms,
        )
        self.progress = result.progress
        return result.action

    def until(self, want: Desired, done: type = Converged, limit: int = 80) -> planner.Action:
        last: planner.Action = Converged()
        for _ in range(limit):
            last = self.run(want)
            if isinstance(last, done):
                return last
        raise AssertionError(f"no {done.__name__} in {limit} runs: {last}; {self.actions[-4:]}")


def voter_changes(actions: list[planner.Action]) -> list[tuple[str, int]]:
    return [
        ("add" if isinstance(a, AddVoter) else "remove", a.key.id)
        for a in actions
        if isinstance(a, (AddVoter, RemoveVoter))
    ]


def converged(world: World, want: Desired) -> None:
    assert world.replicas == want.spec.replicas
    assert sorted(world.voters) == list(range(want.spec.replicas))
    assert world.uncommitted is None
    for i, d in world.voters.items():
        assert world.pods[i].directory == d


def test_a_new_quorum_bootstraps_from_one_standalone_member_and_adds_the_others() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    # every pod starts at once: pod 0 formats --standalone, the others join as observers
    sts = next(a for a in d.actions if isinstance(a, Apply) and a.key == "StatefulSet")
    assert sts.manifest["spec"]["replicas"] == 3
    assert not any(isinstance(a, ScaleStatefulSet) for a in d.actions)
    cm = [a for a in d.actions if isinstance(a, Apply) and a.key == "ConfigMap"]
    assert cm[0].manifest["data"]["bootstrap"] == "standalone"
    assert cm[-1].manifest["data"]["bootstrap"] == "join"  # once a leader was seen
    assert voter_changes(d.actions) == [("add", 1), ("add", 2)]
    converged(world, desired(3))
    # a converged quorum is left alone
    n = len(d.actions)
    assert isinstance(d.run(desired(3)), Converged) and len(d.actions) == n


def test_scale_up_starts_the_pods_together_adds_one_voter_at_a_time_down_leader_last() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    d.actions.clear()
    d.until(desired(5))
    assert voter_changes(d.actions) == [("add", 3), ("add", 4)]
    # the new pods start together as observers; the voters are added one at a time, the
    # second only once the first change is committed
    scales = [a.replicas for a in d.actions if isinstance(a, ScaleStatefulSet)]
    assert scales == [5]
    order = [type(a).__name__ for a in d.actions if isinstance(a, (AddVoter, ScaleStatefulSet))]
    assert order == ["ScaleStatefulSet", "AddVoter", "AddVoter"]
    converged(world, desired(5))
    # down to 3 with the leader on pod 4: pod 3 goes first, the leader last
    world.leader = 4
    d.actions.clear()
    d.until(desired(3))
    assert voter_changes(d.actions) == [("remove", 3), ("remove", 4)]
    steps = [a for a in d.actions if isinstance(a, (RemoveVoter, ScaleStatefulSet))]
    assert [type(a).__name__ for a in steps] == [
        "RemoveVoter",
        "RemoveVoter",
        "ScaleStatefulSet",
        "ScaleStatefulSet",
    ]
    assert world.leader in (0, 1, 2)
    converged(world, desired(3))
    assert 3 not in world.disks and 4 not in world.disks  # whenScaled: Delete


def test_a_voter_that_lost_its_disk_is_replaced_by_its_new_directory() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    old = world.voters[2]
    world.lose_disk(2)
    d.actions.clear()
    d.until(desired(3))
    new = world.voters[2]
    assert new != old
    kinds = [(type(a).__name__, getattr(a, "key", "")) for a in d.actions]
    assert ("Apply", "ConfigMap") in kinds  # the old directory is tombstoned first...
    assert old in world.tombstones
    assert voter_changes(d.actions) == [("remove", 2), ("add", 2)]  # ...then removed, then added
    removed = next(a for a in d.actions if isinstance(a, RemoveVoter))
    assert removed.key.directory_id == old
    converged(world, desired(3))


def test_a_volume_holding_a_replaced_directory_is_refused_not_reformatted() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    old = world.voters[1]
    world.lose_disk(1)
    d.until(desired(3))
    # the old disk comes back (a PV re-attached): the pod refuses it
    world.pods.pop(1)
    world.disks[1] = old
    action = d.until(desired(3), done=Refused)
    assert "q-1" in action.reason and old in action.reason
    assert world.disks[1] == old  # nothing reformatted
    assert isinstance(d.run(desired(3)), Refused)


def test_no_change_that_would_leave_no_caught_up_majority() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(5))
    world.pods[1].alive = world.pods[2].alive = False
    world.pods[1].countdown = world.pods[2].countdown = 10**6  # down for good
    # scale-down would remove voter 4 leaving {0,1,2,3} with 1 and 2 down: 2 of 4 is no majority
    d.actions.clear()
    last = d.run(desired(3))
    assert isinstance(last, Wait)
    assert voter_changes(d.actions) == []


def test_an_unanswered_change_is_never_followed_by_another() -> None:
    # every change is appended, never answered (the RPC times out), and commits a few ticks later
    world = World(ack=False, commit_delay=3)
    d = Driver(world)
    d.until(desired(3))
    d.until(desired(5))
    converged(world, desired(5))
    assert voter_changes(world.changes) == [("add", 1), ("add", 2), ("add", 3), ("add", 4)]
    assert len(d.failures) == 4  # one timeout each, and no second change while one was open
    assert all("another voter change" not in f for f in d.failures), d.failures


def test_plan_with_a_pending_change_only_waits_or_repeats_it() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    observed, quorum = world.observe(), world.describe().quorum
    from metaquorum_operator.membership import PendingChange
    from metaquorum_operator.observed import VoterKey

    pending = PendingChange("add", VoterKey(7, "X"), issued_ms=0)
    action = planner.plan(desired(3), observed, quorum, Progress(pending=pending))
    assert isinstance(action, Wait)
    pending = PendingChange("remove", VoterKey(2, world.voters[2]), issued_ms=0)
    action = planner.plan(desired(3), observed, quorum, Progress(pending=pending))
    assert action == RemoveVoter(pending.key, action.reason)  # type: ignore[union-attr]


class Recording(World):
    """The world, noting who leads whenever a pod is deleted."""

    leaders_at_deletion: dict[str, int]

    def apply(self, action: planner.Action) -> None:
        if isinstance(action, DeletePod):
            self.leaders_at_deletion[action.name] = self.leader
        super().apply(action)


def test_config_change_rolls_followers_first_the_leader_last_after_it_resigned() -> None:
    world = Recording()
    world.leaders_at_deletion = {}
    d = Driver(world)
    d.until(desired(3))
    world.leader = 0
    d.actions.clear()
    d.until(desired(3, config={"controller.quorum.fetch.timeout.ms": "3000"}))
    steps = [
        (type(a).__name__, a.name) for a in d.actions if isinstance(a, (DeletePod, ResignLeader))
    ]
    assert steps == [
        ("DeletePod", "q-2"),
        ("DeletePod", "q-1"),
        ("ResignLeader", "q-0"),
        ("DeletePod", "q-0"),
    ]
    # the leader's pod went as a follower: another (already rolled) voter led by then
    assert world.leaders_at_deletion["q-0"] in (1, 2)
    assert [(r.node_id, r.epoch) for r in world.resigns] == [(0, world.resigns[0].epoch)]
    assert voter_changes(d.actions) == []


def test_a_leader_that_does_not_resign_is_waited_for_then_rolled_anyway() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    world.leader = 0
    want = desired(3, config={"controller.quorum.fetch.timeout.ms": "3000"})
    world.resign = world.resigns.append  # type: ignore[method-assign]  # a node that ignores it
    for _ in range(80):
        if world.resigns:
            break
        d.run(want)
    asked = world.resigns[0]
    assert (asked.node_id, asked.epoch) == (0, world.epoch)
    assert d.progress.resign_asked == (0, world.epoch, d.progress.resign_asked[2])  # type: ignore[index]
    timeout = OP.catch_up.resign_timeout_ms
    # within the bound: wait for another leader, never ask twice nor delete the leader's pod
    while world.clock_ms - d.progress.resign_asked[2] < timeout - 1000:  # type: ignore[index]
        action = d.run(want)
        assert isinstance(action, Wait) and "asked to resign" in action.reason, action
    assert len(world.resigns) == 1
    assert "q-0" not in [a.name for a in d.actions if isinstance(a, DeletePod)]
    # past it: rolled anyway (the node's SIGTERM hand-over resigns it)
    d.until(want)
    assert [a.name for a in d.actions if isinstance(a, DeletePod)][-1] == "q-0"
    assert len(world.resigns) == 1


def test_a_statefulset_deleted_under_a_formed_quorum_comes_back_with_every_pod() -> None:
    # e.g. `kubectl delete statefulset --cascade=orphan` then the pods: the PVCs stay. With one
    # pod at a time, pod 0 alone (one of three voters) could never elect a leader and nothing
    # after rule 3 would run; with every pod back the voters are the same, no change is made.
    world = World()
    d = Driver(world)
    d.until(desired(3))
    voters = dict(world.voters)
    del world.objects["StatefulSet"]
    world.replicas = None
    world.pods.clear()
    world.leader = -1
    d.actions.clear()
    d.until(desired(3))
    assert world.voters == voters  # the same directory ids: nothing re-added or replaced
    assert voter_changes(d.actions) == []
    sts = [a for a in d.actions if isinstance(a, Apply) and a.key == "StatefulSet"]
    assert [a.manifest["spec"]["replicas"] for a in sts] == [3]
    converged(world, desired(3))

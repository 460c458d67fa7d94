"""The planner against a small model of the cluster (StatefulSet controller + slow pods).

The model applies each action as the apiserver and controllers would; the tests check
convergence to the spec and the safety rules (one replica step at a time, nothing disrupted
while a member is down), for hand-picked cases and for random spec changes (hypothesis).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum_operator import builders, planner
from metaquorum_operator.model import Names, OperatorConfig, Owner, QuorumSpec
from metaquorum_operator.planner import (
    Apply,
    Converged,
    DeletePod,
    Desired,
    Observed,
    ObservedObject,
    ObservedPod,
    ObservedStatefulSet,
    ScaleStatefulSet,
    Wait,
    plan,
)

NAMES = Names("q", "ns")
OWNER = Owner("q", "uid-1")


def desired(replicas: int = 3, **kw: object) -> Desired:
    return Desired(
        QuorumSpec(replicas=replicas, **kw),
        NAMES,
        OWNER,  # type: ignore[arg-type]
        OperatorConfig(("node",), quorum_mode="none"),
    )


@dataclass
class World:
    """Owned objects by key -> spec hash; a StatefulSet; pods with a readiness countdown."""

    slow: int = 1  # observations a new pod needs before it is ready
    objects: dict[str, str] = field(default_factory=dict)
    replicas: int | None = None
    template_hash: str | None = None
    pods: dict[int, tuple[str, int]] = field(default_factory=dict)  # ordinal -> (rev, countdown)
    deleted: list[str] = field(default_factory=list)

    def apply(self, action: planner.Action) -> None:
        if isinstance(action, Apply):
            h = action.manifest["metadata"]["annotations"][builders.SPEC_HASH]
            self.objects[action.key] = h
            if action.key == "StatefulSet":
                if action.create:
                    self.replicas = action.manifest["spec"]["replicas"]
                self.template_hash = h
        elif isinstance(action, ScaleStatefulSet):
            self.replicas = action.replicas
        elif isinstance(action, DeletePod):
            self.deleted.append(action.name)
            del self.pods[int(action.name.rsplit("-", 1)[1])]

    def observe(self) -> Observed:
        """The controllers act, then the planner looks."""
        if self.replicas is not None:
            for i in list(self.pods):
                if i >= self.replicas:
                    del self.pods[i]
            for i in range(self.replicas):
                rev, left = self.pods.get(i, (str(self.template_hash), self.slow + 1))
                self.pods[i] = (rev, max(0, left - 1))
        objs = {k: ObservedObject(h, (OWNER.uid,)) for k, h in self.objects.items()}
        sts = None
        if self.replicas is not None:
            sts = ObservedStatefulSet(
                obj=objs.pop("StatefulSet"),
                replicas=self.replicas,
                ready_replicas=sum(1 for _, left in self.pods.values() if left == 0),
                update_revision=self.template_hash,
            )
        pods = [
            ObservedPod(NAMES.pod(i), i, ready=left == 0, revision=rev)
            for i, (rev, left) in sorted(self.pods.items())
        ]
        return Observed(objects=objs, statefulset=sts, pods=pods)


def run(world: World, want: Desired, limit: int = 200) -> list[planner.Action]:
    actions: list[planner.Action] = []
    for _ in range(limit):
        observed = world.observe()
        action = plan(want, observed)
        actions.append(action)
        if isinstance(action, Converged):
            return actions
        unready = [p for p in observed.pods if not p.ready]
        if isinstance(action, (ScaleStatefulSet, DeletePod)):
            assert not unready, f"{action} while {unready} not ready"
        if isinstance(action, ScaleStatefulSet):
            assert world.replicas is not None
            assert abs(action.replicas - world.replicas) == 1
        world.apply(action)
    raise AssertionError(f"no convergence in {limit} steps: {actions[-5:]}")


def converged(world: World, want: Desired) -> None:
    assert world.replicas == want.spec.replicas
    manifests = want.manifests(want.spec.replicas)
    for key, m in manifests.items():
        assert world.objects[key] == m["metadata"]["annotations"][builders.SPEC_HASH]
    assert all(rev == world.template_hash and left == 0 for rev, left in world.pods.values())


def test_creation_order_and_growth_one_member_at_a_time() -> None:
    world, want = World(), desired(3)
    actions = run(world, want)
    applied = [a.key for a in actions if isinstance(a, Apply)]
    assert applied == list(planner.ORDER)
    sts_create = next(a for a in actions if isinstance(a, Apply) and a.key == "StatefulSet")
    assert sts_create.manifest["spec"]["replicas"] == 1
    scales = [a.replicas for a in actions if isinstance(a, ScaleStatefulSet)]
    assert scales == [2, 3]
    assert any(isinstance(a, Wait) for a in actions)
    converged(world, want)


def test_converged_world_plans_nothing() -> None:
    world, want = World(), desired(3)
    run(world, want)
    assert isinstance(plan(want, world.observe()), Converged)


def test_config_change_updates_configmap_and_statefulset_then_rolls_highest_first() -> None:
    world = World()
    run(world, desired(3))
    want = desired(3, config={"controller.quorum.fetch.timeout.ms": "3000"})
    actions = run(world, want)
    assert [a.key for a in actions if isinstance(a, Apply)] == ["ConfigMap", "StatefulSet"]
    assert all(not a.create for a in actions if isinstance(a, Apply))
    assert world.deleted == ["q-2", "q-1", "q-0"]
    converged(world, want)


def test_scaling_alone_rolls_no_pod() -> None:
    world = World()
    run(world, desired(3))
    actions = run(world, desired(5)) + run(world, desired(1))
    assert world.deleted == []
    assert [a.key for a in actions if isinstance(a, Apply)] == ["ConfigMap", "ConfigMap"]


def test_scale_down_removes_before_rolling() -> None:
    world = World()
    run(world, desired(5))
    actions = run(world, desired(3, image="new:1"))
    kinds = [type(a).__name__ for a in actions if not isinstance(a, (Wait, Converged))]
    first_delete = kinds.index("DeletePod")
    assert kinds.count("ScaleStatefulSet") == 2
    assert max(i for i, k in enumerate(kinds) if k == "ScaleStatefulSet") < first_delete
    assert world.deleted == ["q-2", "q-1", "q-0"]


def test_missing_object_is_recreated_and_foreign_object_refused() -> None:
    world, want = World(), desired(3)
    run(world, want)
    del world.objects["ClientService"]
    action = plan(want, world.observe())
    assert isinstance(action, Apply) and action.create and action.key == "ClientService"
    observed = world.observe()
    foreign = dict(observed.objects)
    foreign["ClientService"] = ObservedObject("x", ("someone-else",))
    with pytest.raises(planner.NotOwned, match="Service q"):
        plan(want, dataclasses.replace(observed, objects=foreign))


def test_waits_while_a_pod_is_down() -> None:
    world, want = World(), desired(3)
    run(world, want)
    observed = world.observe()
    pods = [dataclasses.replace(p, ready=p.ordinal != 1) for p in observed.pods]
    action = plan(want, dataclasses.replace(observed, pods=pods))
    assert isinstance(action, Wait) and "q-1" in action.reason


@settings(max_examples=60, deadline=None)
@given(
    first=st.integers(1, 9),
    changes=st.lists(
        st.tuples(st.integers(1, 9), st.sampled_from(["a", "b"]), st.integers(0, 3)), max_size=4
    ),
)
def test_any_sequence_of_spec_changes_converges_safely(
    first: int, changes: list[tuple[int, str, int]]
) -> None:
    world = World()
    run(world, desired(first))
    converged(world, desired(first))
    for replicas, image, slow in changes:
        world.slow = slow
        want = desired(replicas, image=image)
        run(world, want)
        converged(world, want)

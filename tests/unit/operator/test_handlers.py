"""The handlers' step loop (observe -> plan -> execute -> observe) over the cluster model."""

from __future__ import annotations

from metaquorum_operator import handlers, planner
from metaquorum_operator.model import Names
from metaquorum_operator.planner import Apply, Converged, Wait

from tests.unit.operator.test_planner import World, converged, desired
from tests.unit.operator.test_planner_static import LEADER_1
from tests.unit.operator.test_planner_static import desired as static_desired


class ModelKube:
    def __init__(self, world: World) -> None:
        self.world = world
        self.observations = 0

    def observe(self, names: Names) -> planner.Observed:
        self.observations += 1
        return self.world.observe()

    def execute(self, action: planner.Action, names: Names) -> None:
        self.world.apply(action)


def test_first_run_creates_every_object_then_waits_for_the_first_pod() -> None:
    kube, want = ModelKube(World(slow=2)), desired(3)
    done: list[planner.Action] = []
    action, observed = handlers.run_steps(kube, want, None, done.append)
    assert [a.key for a in done if isinstance(a, Apply)] == list(planner.ORDER)
    assert isinstance(action, Wait)
    assert observed.statefulset is not None and observed.statefulset.replicas == 1
    assert kube.observations == len(done) + 1


def test_repeated_runs_converge_and_then_do_nothing() -> None:
    kube, want = ModelKube(World(slow=1)), desired(5)
    for _ in range(50):
        done: list[planner.Action] = []
        action, _observed = handlers.run_steps(kube, want, None, done.append)
        assert len(done) <= handlers.MAX_STEPS
        if isinstance(action, Converged):
            break
    converged(kube.world, want)
    done = []
    action, _ = handlers.run_steps(kube, want, None, done.append)
    assert isinstance(action, Converged) and done == []


def test_describe_names_the_object_and_the_reason() -> None:
    kube, want = ModelKube(World()), desired(3)
    done: list[planner.Action] = []
    handlers.run_steps(kube, want, None, done.append)
    text = handlers._describe(done[0])
    assert text == "created ConfigMap q-config (ConfigMap q-config is missing)"


def test_a_refused_plan_executes_nothing() -> None:
    kube = ModelKube(World(slow=0))
    handlers.run_steps(kube, static_desired(3), LEADER_1, lambda a: None)
    done: list[planner.Action] = []
    action, observed = handlers.run_steps(kube, static_desired(5), LEADER_1, done.append)
    assert isinstance(action, planner.Refused) and done == []
    assert observed.statefulset is not None and observed.statefulset.replicas == 3


def test_no_describe_before_the_statefulset_or_for_a_quorumless_workload() -> None:
    kube = ModelKube(World())
    assert handlers.observe_quorum(kube, static_desired(3)) == handlers.observe.Observation(None)
    handlers.run_steps(kube, desired(3), None, lambda a: None)  # quorum mode "none"
    assert handlers.observe_quorum(kube, desired(3)) == handlers.observe.Observation(None)

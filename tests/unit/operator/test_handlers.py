"""The handlers' step loop (observe objects and quorum -> plan -> execute -> observe again) over
the world model, and resuming a pending voter change from the status."""

from __future__ import annotations

from metaquorum_operator import events, handlers, planner
from metaquorum_operator.membership import PendingChange, Progress
from metaquorum_operator.observed import Observed, VoterKey
from metaquorum_operator.planner import AddVoter, Apply, Converged, Wait
from metaquorum_operator.status import pending_fields

from tests.unit.operator.test_planner import Driver, converged, desired
from tests.unit.operator.world import ModelKube, ModelQuorum, World


class Counting(ModelQuorum):
    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.describes = 0

    def describe(self, desired: planner.Desired, observed: Observed):  # type: ignore[no-untyped-def]
        self.describes += 1
        return super().describe(desired, observed)


def run(
    world: World, quorum: ModelQuorum, progress: Progress | None = None
) -> tuple[handlers.Run, list[planner.Action]]:
    done: list[planner.Action] = []
    result = handlers.run_steps(
        ModelKube(world),
        quorum,
        desired(3),
        progress or Progress(),
        on_action=done.append,
        on_failure=lambda a, e: None,
        clock=lambda: world.clock_ms,
    )
    return result, done


def test_first_run_creates_every_object_and_describes_after_every_action() -> None:
    world = World(slow=2)
    quorum = Counting(world)
    result, done = run(world, quorum)
    applied = [a for a in done if isinstance(a, Apply)]
    assert [a.key for a in applied[:5]] == list(planner.ORDER) and all(
        a.create for a in applied[:5]
    )
    # pod 0 formed the quorum alone: from then on no empty volume formats --standalone
    assert [a.manifest["data"]["bootstrap"] for a in applied[5:]] == ["join"]
    assert isinstance(result.action, Wait)
    # every pod of a new quorum starts at once; the others wait as observers to be added
    assert result.observed.statefulset is not None and result.observed.statefulset.replicas == 3
    assert quorum.describes == len(done) + 1  # the quorum is observed again after each action


def test_repeated_runs_converge_and_then_do_nothing() -> None:
    d = Driver(World())
    d.until(desired(5))
    converged(d.world, desired(5))
    n = len(d.actions)
    assert isinstance(d.run(desired(5)), Converged) and len(d.actions) == n


def test_describe_names_the_object_the_voter_and_the_reason() -> None:
    world = World()
    _, done = run(world, ModelQuorum(world))
    text = events.describe(done[0])
    assert text == "created ConfigMap q-config (ConfigMap q-config is missing)"
    add = AddVoter(VoterKey(3, "DIR"), "node 3 caught up as an observer")
    assert events.describe(add) == (
        "added voter 3 (directory DIR) (node 3 caught up as an observer)"
    )


def test_a_pending_change_survives_an_operator_restart_through_the_status() -> None:
    key = VoterKey(2, "D2")
    progress = Progress(pending=PendingChange("remove", key, issued_ms=99, reflected_at=5))
    status = {"pendingOperation": pending_fields(progress)}
    resumed = handlers.progress_from_status(status)
    assert resumed.pending == PendingChange("remove", key, issued_ms=99)
    assert handlers.progress_from_status({}) == Progress()
    assert handlers.progress_from_status({"pendingOperation": {"kind": "odd", "id": 1}}) == (
        Progress()
    )


def test_a_restarted_operator_waits_for_the_change_it_left_open() -> None:
    world = World(ack=False, commit_delay=4)
    d = Driver(world)
    d.until(desired(1))
    for _ in range(6):  # scale to 2: the add of node 1 is sent and left unanswered
        d.run(desired(2))
        if world.uncommitted is not None:
            break
    assert world.uncommitted is not None and d.progress.pending is not None
    # a new operator process: only the status survives
    fresh = Driver(
        world,
        progress=handlers.progress_from_status({"pendingOperation": pending_fields(d.progress)}),
    )
    action = fresh.run(desired(2))
    assert isinstance(action, Wait) and "commit" in action.reason
    assert len(world.changes) == 1
    fresh.until(desired(2))
    converged(world, desired(2))

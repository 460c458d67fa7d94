"""Static -> dynamic migration (migration.py) through the planner and the step loop: a quorum
whose finalized kraft.version is 0 is upgraded to 1 (UpgradeKraftVersion) once every voter
reports a directory id and is caught up, before any voter change; refused (MigrationBlocked)
naming the voters otherwise; nothing when the level is 1 or unknown."""

from __future__ import annotations

import dataclasses

from metaquorum.admin.client import AdminError
from metaquorum_operator import builders, events, migration, planner
from metaquorum_operator.membership import CatchUp, healthy_keys
from metaquorum_operator.observed import Observed, ObservedObject, ObservedQuorum, ReplicaState

from tests.unit.operator.test_planner import Driver, converged, desired
from tests.unit.operator.world import World


def q(
    dirs: dict[int, str], kraft: int | None, lagging: frozenset[int] = frozenset()
) -> ObservedQuorum:
    def r(i: int, d: str) -> ReplicaState:
        t = 1 if i in lagging else 100_000
        return ReplicaState(i, d, 0 if i in lagging else 500, t, t)

    return ObservedQuorum(
        "c", 0, 4, 500, tuple(r(i, d) for i, d in sorted(dirs.items())), kraft_version=kraft
    )


def test_only_kraft_version_0_is_migrated() -> None:
    for kraft in (1, None):
        quorum = q({0: "A", 1: "B", 2: "C"}, kraft)
        assert migration.step(quorum, healthy_keys(quorum, CatchUp())) is None
    quorum = q({0: "A", 1: "B", 2: "C"}, 0)
    found = migration.step(quorum, healthy_keys(quorum, CatchUp()))
    assert isinstance(found, planner.UpgradeKraftVersion)
    assert events.event_reason(found) == "KraftVersionUpgraded"


def test_a_voter_without_a_directory_id_or_not_caught_up_blocks_it() -> None:
    quorum = q({0: "A", 1: "", 2: "C"}, 0)
    found = migration.step(quorum, healthy_keys(quorum, CatchUp()))
    assert isinstance(found, planner.Refused) and found.code == "MigrationBlocked"
    assert "voters 1 report no directory id" in found.reason
    quorum = q({0: "A", 1: "B", 2: "C"}, 0, lagging=frozenset({2}))
    found = migration.step(quorum, healthy_keys(quorum, CatchUp()))
    assert isinstance(found, planner.Refused) and "voters 2 are not caught up" in found.reason


def test_a_static_voter_set_has_no_directory_ids_the_nodes_status_gives_them() -> None:
    # kraft.version 0: DescribeQuorum names the voters by id only (ZERO directory ids, as
    # Kafka's); each node's GET /status reports its meta.properties directory id
    quorum = q({0: "", 1: "", 2: ""}, 0)
    healthy = healthy_keys(quorum, CatchUp())
    found = migration.step(quorum, healthy)
    assert isinstance(found, planner.Refused) and "voters 0, 1, 2 report no" in found.reason
    reported = dataclasses.replace(quorum, directories=((0, "A"), (2, "C")))
    found = migration.step(reported, healthy)
    assert isinstance(found, planner.Refused) and "voters 1 report no" in found.reason
    reported = dataclasses.replace(quorum, directories=((0, "A"), (1, "B"), (2, "C")))
    assert isinstance(migration.step(reported, healthy), planner.UpgradeKraftVersion)


def test_the_step_loop_migrates_first_then_scales_3_to_5_to_3() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    world.kraft_version = 0  # as if formatted from controller.quorum.voters
    n = len(d.actions)
    d.until(desired(5), limit=120)
    after = d.actions[n:]
    first_change = next(
        i for i, a in enumerate(after) if isinstance(a, planner.AddVoter | planner.RemoveVoter)
    )
    upgrades = [i for i, a in enumerate(after) if isinstance(a, planner.UpgradeKraftVersion)]
    assert upgrades and upgrades[0] < first_change, after[:5]
    assert world.kraft_version == 1 and world.kraft_upgrades == 1
    converged(world, desired(5))
    d.until(desired(3), limit=120)
    converged(world, desired(3))


def test_a_refused_upgrade_is_retried_not_skipped() -> None:
    world = World()
    d = Driver(world)
    d.until(desired(3))
    world.kraft_version = 0
    real = world.upgrade_kraft_version
    calls = {"n": 0}

    def flaky() -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            world.kraft_upgrades += 1
            raise AdminError("REQUEST_TIMED_OUT")
        real()

    world.upgrade_kraft_version = flaky  # type: ignore[method-assign]
    d.until(desired(4), limit=120)
    assert world.kraft_version == 1 and calls["n"] == 2
    assert any("KraftVersionUpgradeFailed" in f or "REQUEST_TIMED_OUT" in f for f in d.failures)


def test_an_adopted_static_quorum_starts_a_pod_per_static_voter() -> None:
    # one pod of a three-voter static quorum could never elect a leader; a new dynamic quorum
    # starts every pod (pod 0 bootstraps alone, the others wait as observers)
    voters = ",".join(f"{i}@q-{i}.q-headless.ns.svc.cluster.local:9093" for i in range(3))
    for spec_voters, first in ((None, 5), (voters, 3)):
        d = desired(5, static_voters=spec_voters)
        objects: dict[str, ObservedObject | None] = {}
        for _ in range(len(planner.ORDER)):
            action = planner.plan(d, Observed(objects=objects))
            assert isinstance(action, planner.Apply) and action.create, action
            objects[action.key] = ObservedObject(
                action.manifest["metadata"]["annotations"][builders.SPEC_HASH], (d.owner.uid,)
            )
        assert action.key == "StatefulSet"
        assert action.manifest["spec"]["replicas"] == first

"""The planner with the real node's static quorum (quorum mode "static").

A static quorum starts whole (all voters, else no leader can be elected), refuses any change of
spec.replicas (it would need KIP-853 voter changes), rolls one pod at a time with the observed
leader last and only while a leader is observed, and writes controller.quorum.voters.
"""

from __future__ import annotations

from metaquorum.runtime.config import parse_voters
from metaquorum_operator import builders
from metaquorum_operator.model import OperatorConfig, QuorumSpec
from metaquorum_operator.planner import (
    Apply,
    Converged,
    DeletePod,
    Desired,
    ObservedQuorum,
    Refused,
    ScaleStatefulSet,
    Wait,
    plan,
)

from .test_planner import NAMES, OWNER, World

STATIC = OperatorConfig()


def desired(replicas: int = 3, **kw: object) -> Desired:
    spec = QuorumSpec(replicas=replicas, cluster_id="MkU3OEVBNTcwNTJENDM2Qk", **kw)  # type: ignore[arg-type]
    return Desired(spec, NAMES, OWNER, STATIC)


def run(world: World, want: Desired, quorum: ObservedQuorum | None, limit: int = 100) -> list:  # type: ignore[type-arg]
    actions = []
    for _ in range(limit):
        action = plan(want, world.observe(), quorum)
        actions.append(action)
        if isinstance(action, (Converged, Refused)):
            return actions
        world.apply(action)
    raise AssertionError(f"no end in {limit} steps: {actions[-5:]}")


LEADER_1 = ObservedQuorum("c", leader_id=1, leader_epoch=3, high_watermark=10)


def test_static_quorum_starts_with_every_voter_and_no_scaling() -> None:
    world = World()
    actions = run(world, desired(3), None)
    sts = next(a for a in actions if isinstance(a, Apply) and a.key == "StatefulSet")
    assert sts.manifest["spec"]["replicas"] == 3
    assert not any(isinstance(a, ScaleStatefulSet) for a in actions)
    assert isinstance(actions[-1], Converged)


def test_voters_are_the_pods_stable_names_as_the_node_parses_them() -> None:
    cm = desired(3).manifests(3)["ConfigMap"]["data"]["server.properties"]
    props = dict(line.split("=", 1) for line in cm.splitlines() if "=" in line)
    assert builders.BOOTSTRAP_SERVERS not in props
    voters = parse_voters(props[builders.VOTERS])  # the node's own parser as the oracle
    assert sorted(voters) == [0, 1, 2]
    assert voters[2].host == NAMES.pod_fqdn(2) and voters[2].port == 9093


def test_container_formats_then_starts_with_the_cluster_id() -> None:
    sts = desired(3).manifests(3)["StatefulSet"]
    (c,) = sts["spec"]["template"]["spec"]["containers"]
    assert c["command"][:2] == ["sh", "-c"]
    script = c["command"][2]
    assert "storage format" in script and "--ignore-formatted" in script
    assert script.index("storage format") < script.index("server start")
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["CLUSTER_ID"] == "MkU3OEVBNTcwNTJENDM2Qk"


def test_a_replica_change_is_refused_and_nothing_moves() -> None:
    for replicas in (1, 5):
        world = World()
        run(world, desired(3), LEADER_1)
        actions = run(world, desired(replicas), LEADER_1)
        assert len(actions) == 1 and isinstance(actions[0], Refused)
        assert "KIP-853" in actions[0].reason and "back to 3" in actions[0].reason
        assert world.replicas == 3 and world.deleted == []


def test_roll_leader_last_and_only_with_a_leader() -> None:
    world = World()
    run(world, desired(3), LEADER_1)
    want = desired(3, image="new:1")
    assert isinstance(plan(want, world.observe(), LEADER_1), Apply)  # the StatefulSet first
    run_until_roll = [plan(want, world.observe(), LEADER_1)]
    world.apply(run_until_roll[0])
    no_leader = ObservedQuorum("c", leader_id=-1, leader_epoch=4, high_watermark=10)
    action = plan(want, world.observe(), no_leader)
    assert isinstance(action, Wait) and "leader" in action.reason
    assert isinstance(plan(want, world.observe(), None), Wait)
    run(world, want, LEADER_1)
    assert world.deleted == ["q-2", "q-0", "q-1"]


def test_roll_after_config_change_keeps_voters() -> None:
    world = World()
    run(world, desired(3), LEADER_1)
    want = desired(3, config={"controller.quorum.fetch.timeout.ms": "3000"})
    actions = run(world, want, LEADER_1)
    assert isinstance(actions[-1], Converged)
    assert sorted(a.name for a in actions if isinstance(a, DeletePod)) == ["q-0", "q-1", "q-2"]

"""Version upgrades (upgrades.py) through the planner and step loop, on the world model with
images: each pod runs the image of the template it was created from and its node reports that
image's version; a bad image never starts (its container waits in CrashLoopBackOff).

Properties (hypothesis, random histories of image changes, rollbacks, bad images and leader
moves): a pod is deleted only when every other pod is ready (never two pods down), the leader
is asked to resign only when no other pod is due (leader last), no image roll continues past a
skew the rule refuses, at most one pod ever runs a bad image, and once the spec names a good
image within the rule the quorum converges with every pod on it. Examples: the order of an
upgrade and of a rollback mid-roll, the Degraded/Upgrading conditions, the skew rule itself.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metaquorum_operator import handlers, observe, planner, upgrades
from metaquorum_operator.model import QuorumSpec
from metaquorum_operator.observed import Observed
from metaquorum_operator.status import compute_status

from tests.unit.operator.test_planner import Driver, converged, desired
from tests.unit.operator.world import NAMES, ModelKube, World

VERSIONS = {"node:a": "0.1.0", "node:b": "0.2.0", "node:c": "0.3.0", "node:old": "0.0.9"}
BAD = "node:bad"


@dataclass
class ImageWorld(World):
    """The world with a node image per pod (the template's when the pod was created)."""

    images: dict[str, str] = field(default_factory=dict)  # pod uid -> image
    template_image: str = "node:a"
    kraft_version: int | None = 1
    violations: list[str] = field(default_factory=list)

    def image(self, i: int) -> str:
        p = self.pods[i]
        return self.images.setdefault(p.uid, self.template_image)

    def replica_up(self, i: int, directory: str) -> bool:
        return super().replica_up(i, directory) and self.image(i) != BAD

    def pod_ready(self, p: Any) -> bool:
        return super().pod_ready(p) and self.images.get(p.uid, self.template_image) != BAD

    def tick(self) -> None:
        super().tick()
        for i in self.pods:
            self.image(i)

    def observe(self) -> Observed:
        seen = super().observe()
        pods = []
        for p in seen.pods:
            image = self.image(p.ordinal)
            failing = "node CrashLoopBackOff" if image == BAD else None
            pods.append(dataclasses.replace(p, image=image, failing=failing))
        return Observed(seen.objects, seen.statefulset, pods, seen.formed, seen.tombstones)

    def describe(self) -> observe.Observation:
        found = super().describe()
        if found.quorum is None:
            return found
        versions = tuple(
            (i, VERSIONS[self.image(i)])
            for i, p in sorted(self.pods.items())
            if p.alive and self.image(i) != BAD
        )
        q = dataclasses.replace(found.quorum, versions=versions, kraft_version=self.kraft_version)
        return observe.Observation(q)

    def apply(self, action: planner.Action) -> None:
        if isinstance(action, planner.Apply) and action.key == "StatefulSet":
            containers = action.manifest["spec"]["template"]["spec"]["containers"]
            self.template_image = next(c["image"] for c in containers if c["name"] == "node")
        if isinstance(action, planner.DeletePod):
            i = int(action.name.rsplit("-", 1)[1])
            down = [j for j, p in self.pods.items() if j != i and not self.pod_ready(p) and p.alive]
            if down:
                self.violations.append(f"{action.name} deleted while {down} are not ready")
            if i == self.leader and len(self.voter_set()) > 1:
                self.violations.append(f"{action.name} deleted while leading")
        if isinstance(action, planner.ResignLeader):
            due = [
                j for j in self.pods if j != action.node_id and self.image(j) != self.template_image
            ]
            if due:
                self.violations.append(f"leader {action.node_id} asked to resign before {due}")
        super().apply(action)

    def resign(self, action: planner.ResignLeader) -> None:
        self.apply(action)  # the checks above
        super().resign(action)

    def running_images(self) -> dict[int, str]:
        return {i: self.image(i) for i in self.pods}


class Quorum:
    """handlers.Quorum over an ImageWorld (resign goes through its checks)."""

    def __init__(self, world: ImageWorld) -> None:
        self.world = world

    def describe(self, desired: planner.Desired, observed: Observed) -> observe.Observation:
        return self.world.describe()

    def change(self, action: Any, desired: planner.Desired) -> None:
        self.world.change(action)

    def resign(self, action: planner.ResignLeader, desired: planner.Desired) -> None:
        self.world.resign(action)

    def upgrade_kraft_version(self, desired: planner.Desired) -> None:
        self.world.upgrade_kraft_version()


@dataclass
class ImageDriver(Driver):
    def run(self, want: planner.Desired) -> planner.Action:
        assert isinstance(self.world, ImageWorld)
        result = handlers.run_steps(
            ModelKube(self.world),
            Quorum(self.world),
            want,
            self.progress,
            on_action=self.actions.append,
            on_failure=lambda a, e: self.failures.append(f"{a}: {e}"),
            clock=lambda: self.world.clock_ms,
        )
        self.progress = result.progress
        return result.action


def deletions(actions: list[planner.Action]) -> list[str]:
    return [a.name for a in actions if isinstance(a, planner.DeletePod)]


def started(replicas: int = 3, image: str = "node:a") -> tuple[ImageWorld, ImageDriver]:
    world = ImageWorld()
    d = ImageDriver(world)
    d.until(desired(replicas, image=image))
    return world, d


def test_an_upgrade_rolls_followers_highest_first_and_the_leader_last_after_it_resigns() -> None:
    world, d = started()
    world.leader, world.epoch = 1, world.epoch + 1  # leader in the middle
    n = len(d.actions)
    d.until(desired(3, image="node:b"), limit=150)
    rolled = d.actions[n:]
    assert deletions(rolled) == ["q-2", "q-0", "q-1"]
    resign = [a for a in rolled if isinstance(a, planner.ResignLeader)]
    assert [r.node_id for r in resign] == [1]
    assert rolled.index(resign[0]) > rolled.index(
        next(a for a in rolled if isinstance(a, planner.DeletePod) and a.name == "q-0")
    )
    assert set(world.running_images().values()) == {"node:b"}
    assert not world.violations, world.violations
    converged(world, desired(3))


def test_a_change_back_mid_roll_rolls_back_the_same_way() -> None:
    world, d = started()
    want_b = desired(3, image="node:b")
    while "node:b" not in world.running_images().values():
        d.run(want_b)
    assert world.running_images()[2] == "node:b"  # the first pod rolled, others on a
    n = len(d.actions)
    d.until(desired(3, image="node:a"), limit=150)
    assert deletions(d.actions[n:]) == ["q-2"]  # only the pod on the abandoned image
    assert set(world.running_images().values()) == {"node:a"}
    assert not world.violations, world.violations


def test_a_bad_image_stops_after_one_pod_and_fixing_the_spec_resumes() -> None:
    world, d = started()
    bad = desired(3, image=BAD)
    last: planner.Action = planner.Converged()
    for _ in range(40):
        last = d.run(bad)
    assert isinstance(last, planner.Refused) and last.code == upgrades.STALLED
    assert "q-2 does not become ready on image node:bad (node CrashLoopBackOff)" in last.reason
    assert [i for i, im in world.running_images().items() if im == BAD] == [2]
    assert deletions(d.actions).count("q-1") == 0
    s = compute_status(
        bad.spec,
        NAMES,
        generation=2,
        observed=world.observe(),
        quorum=world.describe().quorum,
        action=last,
        now="t",
        previous=None,
    )
    conds = {c["type"]: c for c in s["conditions"]}
    assert conds["Degraded"]["status"] == "True"
    assert conds["Degraded"]["reason"] == "UpgradeStalled"
    assert "q-2" in conds["Degraded"]["message"]
    assert (conds["Upgrading"]["status"], conds["Upgrading"]["reason"]) == (
        "True",
        "UpgradeStalled",
    )
    assert [v.get("version") for v in s["versions"]] == ["0.1.0", "0.1.0", None]
    # fix the spec: the bad pod is restarted on the good image, then the roll goes on
    n = len(d.actions)
    d.until(desired(3, image="node:b"), limit=150)
    assert deletions(d.actions[n:])[0] == "q-2"
    assert set(world.running_images().values()) == {"node:b"}
    assert not world.violations, world.violations


def test_a_skew_of_two_minor_versions_is_refused_after_the_first_pod_reports_it() -> None:
    world, d = started()
    last: planner.Action = planner.Converged()
    for _ in range(40):
        last = d.run(desired(3, image="node:c"))
    assert isinstance(last, planner.Refused) and last.code == upgrades.SKEW
    assert "0.1.0" in last.reason and "0.3.0" in last.reason
    assert sorted(world.running_images().values()) == ["node:a", "node:a", "node:c"]


def test_a_declared_spec_version_refuses_the_skew_before_any_pod_restarts() -> None:
    world, d = started()
    last: planner.Action = planner.Converged()
    for _ in range(20):
        last = d.run(desired(3, image="node:c", version="0.3.0"))
    assert isinstance(last, planner.Refused) and last.code == upgrades.SKEW
    assert "and spec.version at 0.3.0" in last.reason
    assert set(world.running_images().values()) == {"node:a"}
    assert deletions(d.actions) == []


def test_a_downgrade_below_the_finalized_kraft_version_is_refused() -> None:
    _, d = started()
    for _ in range(20):
        last = d.run(desired(3, image="node:old", version="0.0.9"))
    assert isinstance(last, planner.Refused) and last.code == upgrades.SKEW
    assert "kraft.version 1" in last.reason
    assert deletions(d.actions) == []


def test_the_skew_rule() -> None:
    ok = upgrades.skew_problem
    assert ok({"a": "0.1.0", "b": "0.2.0"}, 1) is None
    assert ok({"a": "1.9.3", "b": "1.10.0", "c": "1.10.1"}, 1) is None
    assert "more than 1 minor" in (ok({"a": "0.1.0", "b": "0.3.0"}, None) or "")
    assert "another major" in (ok({"a": "1.9.0", "b": "2.0.0"}, None) or "")
    assert ok({"a": "0.1.0", "b": "a-local-build"}, 1) is None  # unparsed: not refused
    assert "kraft.version 1" in (ok({"a": "0.0.9"}, 1) or "")
    assert ok({"a": "0.0.9"}, 0) is None
    assert upgrades.parse_version("v1.2") == (1, 2, 0)
    assert upgrades.parse_version("0.2.0-rc1") == (0, 2, 0)


def test_the_upgrading_condition_and_versions_status() -> None:
    world, d = started()
    want_b = desired(3, image="node:b")
    last: planner.Action = planner.Converged()
    while "node:b" not in world.running_images().values():
        last = d.run(want_b)
    observed, quorum = world.observe(), world.describe().quorum
    spec: QuorumSpec = want_b.spec
    status, reason, message = upgrades.upgrading_condition(spec, observed, quorum, last)
    assert (status, reason) == ("True", "RollingImage")
    assert "of 3 pods run node:b" in message and "q-2 0.2.0" in message
    rows = upgrades.versions_status(spec, observed, quorum)
    assert {r["pod"]: (r["image"], r["current"]) for r in rows}["q-2"] == ("node:b", True)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("image"), st.sampled_from(["node:a", "node:b", BAD])),
        st.tuples(st.just("leader"), st.integers(0, 4)),
        st.tuples(st.just("run"), st.integers(1, 6)),
        st.tuples(st.just("scale"), st.integers(3, 5)),
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.sampled_from(["node:a", "node:b"]))
def test_random_upgrades_and_rollbacks_are_safe_and_converge(
    history: list[tuple[str, Any]], final: str
) -> None:
    world, d = started()
    image, replicas = "node:a", 3
    for op, arg in history:
        if op == "image":
            image = arg
        elif op == "scale":
            replicas = arg
        elif op == "leader":
            vs = world.voter_set()
            if arg in vs and world.caught_up(arg, vs[arg]):
                world.leader, world.epoch = arg, world.epoch + 1
        for _ in range(arg if op == "run" else 2):
            d.run(desired(replicas, image=image))
        assert not world.violations, world.violations
        assert list(world.running_images().values()).count(BAD) <= 1
    want = desired(replicas, image=final)
    d.until(want, limit=250)
    assert not world.violations, world.violations
    assert set(world.running_images().values()) == {final}
    converged(world, want)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["node:b", "node:c", "node:old"]), st.booleans(), st.integers(3, 5))
def test_no_roll_goes_past_a_refused_skew(target: str, declare: bool, replicas: int) -> None:
    world, d = started(replicas)
    want = desired(replicas, image=target, version=VERSIONS[target] if declare else None)
    for _ in range(60):
        d.run(want)
        running = {f"q-{i}": VERSIONS[im] for i, im in world.running_images().items()}
        on_target = sum(1 for im in world.running_images().values() if im == target)
        if upgrades.skew_problem(running | {"x": VERSIONS[target]}, 1) is not None:
            # refused: none on the target when declared, else only the first pod
            assert on_target <= (0 if declare else 1), (running, d.actions[-3:])
    assert not world.violations, world.violations

"""A model of the cluster and its KRaft quorum for the operator's planner and step loop.

Kubernetes side: owned objects by spec hash, a StatefulSet controller (pods 0..replicas-1, PVCs
kept or deleted on scale-down as the StatefulSet's whenScaled policy says), pods that need a few
observations to become ready. Node side, as the real node behaves with KIP-853: the format init
container (an empty volume formats --standalone on pod 0 of a new quorum, else
--no-initial-controllers with a fresh directory id; a tombstoned directory is refused), replicas
that catch up after a few observations, a leader elected among the live voters, and voter
changes that are appended uncommitted and commit once a majority of the new set is up; the
leader refuses a change while another is uncommitted (as Kafka's leader does).

A leader asked to resign (POST /resign?epoch=N) hands over to the lowest caught-up other voter in
a new epoch. `observe()` and `describe()` are what the planner sees; the world moves one tick
per `observe`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from metaquorum.admin.client import AdminError
from metaquorum_operator import builders, observe, planner
from metaquorum_operator.model import Names, Owner
from metaquorum_operator.observed import (
    Observed,
    ObservedObject,
    ObservedPod,
    ObservedQuorum,
    ObservedStatefulSet,
    ReplicaState,
    VoterKey,
)

NAMES = Names("q", "ns")
OWNER = Owner("q", "uid-1")
_dirs = itertools.count(1)
_uids = itertools.count(1)


def new_dir() -> str:
    return f"DIR{next(_dirs):019d}"


@dataclass
class Pod:
    revision: str
    countdown: int  # observations until ready
    directory: str | None = None  # None until the format init container ran
    refused: str | None = None
    behind: int = 3  # observations until caught up
    alive: bool = True
    down_for: int = 0  # ticks until a stopped process comes back
    uid: str = field(default_factory=lambda: f"uid-{next(_uids)}")
    manual_roll: bool = False  # the annotation metaquorum.dev/manual-roll on this pod
    created_ms: int = 0  # the pod's creationTimestamp (world clock)


@dataclass
class World:
    slow: int = 1
    catch_up: int = 2
    objects: dict[str, str] = field(default_factory=dict)
    formed_flag: bool = False
    tombstones: frozenset[str] = frozenset()
    replicas: int | None = None
    template_hash: str | None = None
    delete_claims_on_scale_down: bool = True
    pods: dict[int, Pod] = field(default_factory=dict)
    disks: dict[int, str] = field(default_factory=dict)  # PVC contents: ordinal -> directory
    voters: dict[int, str] = field(default_factory=dict)  # committed voter set
    uncommitted: tuple[str, VoterKey] | None = None
    leader: int = -1
    epoch: int = 0
    clock_ms: int = 1_000_000
    leo: int = 0
    deleted: list[str] = field(default_factory=list)
    changes: list[planner.Action] = field(default_factory=list)
    resigns: list[planner.ResignLeader] = field(default_factory=list)
    ack: bool = True  # whether a voter change answers (else: times out, left uncommitted)
    commit_delay: int = 0  # ticks an unanswered change stays uncommitted
    waited: int = 0
    record_offset: int = 0  # offset of the uncommitted VotersRecord (the HW stays below it)
    roll_annotation: bool = False  # metaquorum.dev/manual-roll on the MetadataQuorum
    recover_annotation: str | None = None  # metaquorum.dev/recover-from on the MetadataQuorum
    kraft_version: int | None = None  # the finalized kraft.version as ApiVersions tells it
    kraft_upgrades: int = 0
    # PVCs in FileSystemResizePending: ordinal -> since (ms). A driver without online expansion
    # grows the filesystem when a new pod mounts the volume (then the condition clears, unless
    # fs_clears_at_mount is False: a driver slow to report it).
    fs_pending: dict[int, int] = field(default_factory=dict)
    fs_clears_at_mount: bool = True

    # ---- the quorum's truth --------------------------------------------------------------
    def voter_set(self) -> dict[int, str]:
        """The latest voter set, uncommitted change included (KIP-853: in effect when appended)."""
        v = dict(self.voters)
        if self.uncommitted:
            kind, key = self.uncommitted  # appended at record_offset
            if kind == "add":
                v[key.id] = key.directory_id
            else:
                v.pop(key.id, None)
        return v

    def replica_up(self, i: int, directory: str) -> bool:
        p = self.pods.get(i)
        return p is not None and p.alive and p.directory == directory and p.refused is None

    def caught_up(self, i: int, directory: str) -> bool:
        p = self.pods.get(i)
        return self.replica_up(i, directory) and p is not None and p.behind == 0

    def up_majority(self, voters: dict[int, str]) -> bool:
        up = sum(1 for i, d in voters.items() if self.caught_up(i, d) or i == self.leader)
        return bool(voters) and 2 * up > len(voters)

    # ---- one tick ------------------------------------------------------------------------
    def tick(self) -> None:
        self.clock_ms += 1000
        if self.replicas is not None:
            for i in list(self.pods):
                if i >= self.replicas:
                    del self.pods[i]
                    if self.delete_claims_on_scale_down:
                        self.disks.pop(i, None)
            for i in range(self.replicas):
                if i not in self.pods:
                    self.pods[i] = Pod(
                        str(self.template_hash), self.slow + 1, created_ms=self.clock_ms
                    )
                    if self.fs_clears_at_mount:
                        self.fs_pending.pop(i, None)
                self.start(i)
        self.elect()
        self.leo += 5 if self.leader >= 0 else 0
        for p in self.pods.values():
            if p.down_for > 0:
                p.down_for -= 1
                if p.down_for == 0:
                    p.alive, p.behind, p.countdown = True, 2, self.slow + 1
            if p.alive and p.directory and self.leader >= 0:
                p.behind = max(0, p.behind - 1)
            if p.countdown > 0:
                p.countdown -= 1
        if self.uncommitted and self.leader >= 0 and self.up_majority(self.voter_set()):
            self.waited += 1
            if self.waited > self.commit_delay:
                self.commit()

    def start(self, i: int) -> None:
        p = self.pods[i]
        if p.directory is not None or p.refused is not None:
            return
        disk = self.disks.get(i)
        if disk is not None:
            if disk in self.tombstones:
                p.refused = f"directory {disk} was replaced in the quorum and may not rejoin"
                return
            p.directory = disk
            return
        d = new_dir()
        self.disks[i] = p.directory = d
        p.behind = self.catch_up
        if i == 0 and not self.formed_flag:
            self.voters = {0: d}  # --standalone: the bootstrap checkpoint names it alone

    def elect(self) -> None:
        vs = self.voter_set()
        if self.leader >= 0 and self.leader in vs and self.replica_up(self.leader, vs[self.leader]):
            return
        live = sorted(i for i, d in vs.items() if self.replica_up(i, d))
        if 2 * len(live) > len(vs):
            self.leader, self.epoch = live[0], self.epoch + 1
        else:
            self.leader = -1

    def commit(self) -> None:
        self.voters = self.voter_set()
        self.uncommitted = None
        self.waited = 0
        if self.leader not in self.voters:
            self.leader = -1  # a removed leader resigns once the removal is committed
            self.elect()

    # ---- what the operator sees and does -------------------------------------------------
    def observe(self) -> Observed:
        self.tick()
        objs = {k: ObservedObject(h, (OWNER.uid,)) for k, h in self.objects.items()}
        sts = None
        if self.replicas is not None:
            ready = sum(1 for p in self.pods.values() if self.pod_ready(p))
            sts = ObservedStatefulSet(
                obj=objs.pop("StatefulSet"),
                replicas=self.replicas,
                ready_replicas=ready,
                update_revision=self.template_hash,
            )
        pods = [
            ObservedPod(
                NAMES.pod(i),
                i,
                self.pod_ready(p),
                p.revision,
                volume_refused=p.refused,
                uid=p.uid,
                manual_roll=p.manual_roll,
                fs_resize_pending_ms=(
                    since
                    if (since := self.fs_pending.get(i)) is not None and p.created_ms <= since
                    else None
                ),
            )
            for i, p in sorted(self.pods.items())
        ]
        return Observed(objs, sts, pods, formed=self.formed_flag, tombstones=self.tombstones)

    def pod_ready(self, p: Pod) -> bool:
        # the node's /readyz: a leader known and this replica caught up
        up = p.alive and p.countdown == 0 and p.refused is None
        return up and self.leader >= 0 and p.behind == 0

    def describe(self) -> observe.Observation:
        if self.replicas is None:
            return observe.Observation(None)
        if self.leader < 0:
            return observe.Observation(None, "no leader")
        vs = self.voter_set()

        def replica(i: int, d: str) -> ReplicaState:
            # kraft.version 0: a static voter set names ids only (no directory ids)
            shown = d if self.kraft_version != 0 or i not in vs else ""
            if i == self.leader and vs.get(i) == d:
                # the leader describes itself at its log end, caught up now (Kafka's
                # LeaderState.describeQuorum): it answered, so it is up
                return ReplicaState(i, shown, self.leo, self.clock_ms, self.clock_ms)
            up = self.replica_up(i, d)
            p = self.pods.get(i)
            behind = p.behind if p is not None and up else 1000
            seen = self.clock_ms if up and behind == 0 else self.clock_ms - 60_000
            return ReplicaState(i, shown, max(0, self.leo - behind * 500), seen, seen)

        voters = tuple(replica(i, d) for i, d in sorted(vs.items()))
        # each live node's own directory id, from its GET /status
        dirs = tuple(
            (i, p.directory) for i, p in sorted(self.pods.items()) if p.alive and p.directory
        )
        observers = tuple(
            replica(i, p.directory)
            for i, p in sorted(self.pods.items())
            if p.alive and p.directory and vs.get(i) != p.directory
        )
        hw = self.leo - 5 if self.uncommitted is None else min(self.leo - 5, self.record_offset)
        return observe.Observation(
            ObservedQuorum(
                "c",
                self.leader,
                self.epoch,
                hw,
                voters,
                observers,
                kraft_version=self.kraft_version,
                directories=dirs,
            )
        )

    def apply(self, action: planner.Action) -> None:
        if isinstance(action, planner.Apply):
            h = action.manifest["metadata"]["annotations"][builders.SPEC_HASH]
            self.objects[action.key] = h
            if action.key == "ConfigMap":
                data = action.manifest["data"]
                self.formed_flag = data[builders.BOOTSTRAP_KEY] == "join"
                self.tombstones = frozenset(data[builders.TOMBSTONES_KEY].split())
            if action.key == "StatefulSet":
                if action.create:
                    self.replicas = action.manifest["spec"]["replicas"]
                policy = action.manifest["spec"]["persistentVolumeClaimRetentionPolicy"]
                self.delete_claims_on_scale_down = policy["whenScaled"] == "Delete"
                self.template_hash = h
        elif isinstance(action, planner.ScaleStatefulSet):
            self.replicas = action.replicas
        elif isinstance(action, planner.DeletePod):
            self.deleted.append(action.name)
            del self.pods[int(action.name.rsplit("-", 1)[1])]
        elif isinstance(action, planner.VOTER_CHANGES):
            self.change(action)
        elif isinstance(action, planner.EndManualRoll):
            self.roll_annotation = False
        elif isinstance(action, planner.EndRecovery):
            self.recover_annotation = None

    def change(self, action: planner.AddVoter | planner.RemoveVoter) -> None:
        """The leader's side of AddRaftVoter / RemoveRaftVoter."""
        self.changes.append(action)
        if self.leader < 0:
            raise AdminError("no leader")
        if self.uncommitted is not None:
            raise AdminError("REQUEST_TIMED_OUT: another voter change is in progress")
        vs = self.voter_set()
        key = action.key
        if isinstance(action, planner.AddVoter):
            if key.id in vs:
                raise AdminError("DUPLICATE_VOTER")
            if not self.caught_up(key.id, key.directory_id):
                raise AdminError("REQUEST_TIMED_OUT: not caught up")
            self.uncommitted = ("add", key)
            self.record_offset = self.leo
        else:
            if vs.get(key.id) != key.directory_id:
                raise AdminError("VOTER_NOT_FOUND")
            self.uncommitted = ("remove", key)
            self.record_offset = self.leo
        if self.ack and self.up_majority(self.voter_set()):
            self.commit()
        elif self.ack:
            raise AdminError("REQUEST_TIMED_OUT: not committed")
        else:
            raise AdminError("no answer from the leader")

    def resign(self, action: planner.ResignLeader) -> None:
        """POST /resign?epoch=N: the leader of that epoch hands over to a caught-up voter."""
        self.resigns.append(action)
        if (self.leader, self.epoch) != (action.node_id, action.epoch):
            return  # 409: not the leader of that epoch
        vs = self.voter_set()
        others = sorted(i for i, d in vs.items() if i != self.leader and self.caught_up(i, d))
        if others:
            self.leader, self.epoch = others[0], self.epoch + 1

    def upgrade_kraft_version(self) -> None:
        """UpdateFeatures kraft.version=1: the leader commits it (a majority up) for good."""
        self.kraft_upgrades += 1
        if self.leader < 0 or not self.up_majority(self.voter_set()):
            raise AdminError("REQUEST_TIMED_OUT")
        self.kraft_version = 1

    # ---- faults --------------------------------------------------------------------------
    def lose_disk(self, i: int) -> None:
        """Pod i and its PVC go; the StatefulSet recreates both, empty."""
        self.pods.pop(i, None)
        self.disks.pop(i, None)

    def stop(self, i: int, ticks: int) -> None:
        """Pod i's process is down (hung node, network cut) for `ticks` observations."""
        if i in self.pods:
            self.pods[i].alive, self.pods[i].down_for = False, ticks

    def kill(self, i: int) -> None:
        """Pod i's process dies and the pod is recreated with its volume."""
        if i in self.pods:
            p = self.pods[i]
            self.pods[i] = Pod(p.revision, self.slow + 1, behind=2)


class ModelKube:
    """handlers.Cluster over the world."""

    def __init__(self, world: World) -> None:
        self.world = world

    def observe(self, names: Names) -> Observed:
        return self.world.observe()

    def execute(self, action: planner.Action, names: Names) -> None:
        self.world.apply(action)


class ModelQuorum:
    """handlers.Quorum over the world."""

    def __init__(self, world: World) -> None:
        self.world = world

    def describe(self, desired: planner.Desired, observed: Observed) -> observe.Observation:
        return self.world.describe()

    def change(
        self, action: planner.AddVoter | planner.RemoveVoter, desired: planner.Desired
    ) -> None:
        self.world.change(action)

    def resign(self, action: planner.ResignLeader, desired: planner.Desired) -> None:
        self.world.resign(action)

    def upgrade_kraft_version(self, desired: planner.Desired) -> None:
        self.world.upgrade_kraft_version()

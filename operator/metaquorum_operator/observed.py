"""What the operator observes, as plain values: owned objects, pods, and the live quorum.

Role: the inputs of the pure planner (planner.py) and of the status (status.py). `kube.py` fills
`Observed` from uncached GETs; `observe.py` fills `ObservedQuorum` from the leader's
DescribeQuorum v2 answer (KIP-853: every replica with its directory id, log end offset and the
leader's timestamps of its last fetch and last caught-up moment).

Invariants: frozen values, no IO. A replica is named by its `VoterKey` (id, directory id), as
KIP-853 names a voter: one node id can have two incarnations after a disk loss (the old voter
(id, A) and the new observer (id, B)), and they are different replicas. Timestamps are the
leader's clock in milliseconds; -1 means unknown (Kafka's convention).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ObservedObject:
    """What the planner needs from an owned object: its hash annotation and owner uids."""

    spec_hash: str | None
    owner_uids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ObservedStatefulSet:
    obj: ObservedObject
    replicas: int
    ready_replicas: int = 0
    current_replicas: int = 0
    observed_generation: int = 0
    generation: int = 0
    update_revision: str | None = None


@dataclass(frozen=True, slots=True)
class ObservedPod:
    """One pod of the StatefulSet. `volume_refused` is the message of a format init container
    that refused the pod's volume (another cluster's data, a replaced directory id); `image` is
    its node container's image, `manual_roll` whether it carries the annotation
    metaquorum.dev/manual-roll: "true" (restart this pod once)."""

    name: str
    ordinal: int
    ready: bool
    revision: str | None = None
    terminating: bool = False
    volume_refused: str | None = None
    uid: str = ""
    image: str | None = None
    manual_roll: bool = False
    # why a container of the pod does not start (e.g. "node CrashLoopBackOff",
    # "node ImagePullBackOff"), None when none is failing (upgrades.py stops a roll on it)
    failing: str | None = None
    # the scheduler's reason when the pod cannot be placed (PodScheduled False), else None
    unschedulable: str | None = None
    # When its PVC's filesystem resize became pending (FileSystemResizePending True since then,
    # wall clock ms), if the pod was created no later: it mounted the volume before the driver
    # grew it, and a driver without online expansion grows the filesystem at the next mount
    # (a restart). None otherwise (no resize pending, or the pod mounted the grown volume).
    fs_resize_pending_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Observed:
    """The cluster as read at the start of one reconcile step. From the ConfigMap: `formed`,
    its record that the quorum has had a leader once (from then on no pod formats
    --standalone), and `tombstones`, the directory ids of replaced disks (a pod finding one of
    them on its volume refuses to start)."""

    objects: Mapping[str, ObservedObject | None] = field(default_factory=dict)
    statefulset: ObservedStatefulSet | None = None
    pods: Sequence[ObservedPod] = ()
    formed: bool = False
    tombstones: frozenset[str] = frozenset()
    recovery: str = ""  # its `recover-from` key: a recovery under way (recovery.py)


@dataclass(frozen=True, slots=True, order=True)
class VoterKey:
    """A replica as KIP-853 names it: node id and directory id ('' when it reports none)."""

    id: int
    directory_id: str


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One replica in DescribeQuorum: its key and its progress as the leader sees it."""

    id: int
    directory_id: str
    log_end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1

    @property
    def key(self) -> VoterKey:
        return VoterKey(self.id, self.directory_id)


@dataclass(frozen=True, slots=True)
class ObservedQuorum:
    """DescribeQuorum as seen by the operator (None in the planner until the node answers)."""

    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...] = ()
    observers: tuple[ReplicaState, ...] = ()
    # (node id, software version) of each node whose /status answered (upgrades.py)
    versions: tuple[tuple[int, str], ...] = ()
    # the finalized kraft.version (ApiVersions' finalized features), None when not read
    kraft_version: int | None = None
    # (node id, directory id) of each node whose /status answered: a static quorum's voters
    # have none in DescribeQuorum (kraft.version 0: the voter set names ids only)
    directories: tuple[tuple[int, str], ...] = ()

    @property
    def has_leader(self) -> bool:
        return self.leader_id >= 0

    def leader(self) -> ReplicaState | None:
        return next((v for v in self.voters if v.id == self.leader_id), None)

    def version_of(self, node_id: int) -> str | None:
        return dict(self.versions).get(node_id)

    def directory_of(self, node_id: int) -> str | None:
        """The directory id node `node_id` reports: DescribeQuorum's, else its /status's."""
        voter = next((v for v in self.voters if v.id == node_id), None)
        if voter is not None and voter.directory_id:
            return voter.directory_id
        return dict(self.directories).get(node_id)

    def voter_keys(self) -> frozenset[VoterKey]:
        return frozenset(v.key for v in self.voters)

"""The reconcile planner: desired spec + observed objects + observed quorum -> next single action.

Role: the whole decision logic of the operator as one pure function, `plan`, so every step is
unit-testable and the quorum operations of a later issue (bootstrap formatting, AddRaftVoter /
RemoveRaftVoter one at a time, disk-loss replacement, KIP-853) slot in as more rules here. The
handlers (handlers.py) observe, call `plan`, execute the one action, and observe again.

Rules, in order (the first that applies wins):
1. Owned objects (ConfigMap, headless Service, client Service, PDB, StatefulSet) that are missing
   are created, stale ones (spec-hash annotation differs) updated, in that order. A new
   StatefulSet starts at one replica (quorum mode "none"): it grows one member at a time.
2. While a pod of the StatefulSet is not ready (or the StatefulSet has not caught up with its own
   replicas), wait: no membership or roll step with a member down.
3. Scale down one replica when above spec.replicas (before rolling pods that are about to go).
4. OnDelete roll: delete one pod whose revision is not the StatefulSet's update revision, highest
   ordinal first (the leader-last rule joins when the quorum is observed).
   The quorum's leader goes last; a static quorum rolls only while a leader is observed.
5. Static quorum (the real node, OperatorConfig.quorum_mode "static"): a spec.replicas other
   than the StatefulSet's is Refused (changing static voters needs every member restarted with
   a new voter list, unsafe; KIP-853 dynamic voters are not supported by the node yet). A new
   static StatefulSet starts at spec.replicas (all voters), and rule 3 does not apply.
6. Scale up one replica when below spec.replicas (new members join on the new revision).
7. Otherwise the quorum is converged.

Invariants: pure (no IO, no clock); at most one action per call; never deletes a pod or scales
while another member is unready; never touches an object it does not own (ownerReference uid).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from metaquorum_operator import builders
from metaquorum_operator.model import Names, OperatorConfig, Owner, QuorumSpec

ORDER = ("ConfigMap", "HeadlessService", "ClientService", "PodDisruptionBudget", "StatefulSet")


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
    name: str
    ordinal: int
    ready: bool
    revision: str | None = None
    terminating: bool = False


@dataclass(frozen=True, slots=True)
class Observed:
    """The cluster as read at the start of one reconcile step."""

    objects: Mapping[str, ObservedObject | None] = field(default_factory=dict)
    statefulset: ObservedStatefulSet | None = None
    pods: Sequence[ObservedPod] = ()


@dataclass(frozen=True, slots=True)
class VoterKey:
    id: int
    directory_id: str


@dataclass(frozen=True, slots=True)
class ObservedQuorum:
    """DescribeQuorum as seen by the operator (None until the node exists)."""

    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[VoterKey, ...] = ()
    observers: tuple[VoterKey, ...] = ()


@dataclass(frozen=True, slots=True)
class Apply:
    """Create (`create=True`) or update one owned object to `manifest`."""

    key: str
    manifest: dict[str, Any]
    create: bool
    reason: str


@dataclass(frozen=True, slots=True)
class ScaleStatefulSet:
    replicas: int
    reason: str


@dataclass(frozen=True, slots=True)
class DeletePod:
    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Wait:
    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    """The spec asks for something the operator will not do; nothing changes (a Warning Event
    and the Ready condition say why and how to undo it)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Converged:
    reason: str = "all objects up to date and all replicas ready"


Action = Apply | ScaleStatefulSet | DeletePod | Wait | Refused | Converged


class NotOwned(Exception):
    """An object with one of our names exists but another owner controls it."""


@dataclass(frozen=True, slots=True)
class Desired:
    spec: QuorumSpec
    names: Names
    owner: Owner
    operator: OperatorConfig = field(default_factory=OperatorConfig)

    def manifests(self, sts_replicas: int) -> dict[str, dict[str, Any]]:
        """The owned objects for a StatefulSet of `sts_replicas`; a static quorum's voters are
        the pods that exist (changing them is refused, rule 5)."""
        s, n, o = self.spec, self.names, self.owner
        voters = sts_replicas if self.operator.static_quorum else None
        return {
            "ConfigMap": builders.configmap(s, n, o, voters),
            "HeadlessService": builders.headless_service(s, n, o),
            "ClientService": builders.client_service(s, n, o),
            "PodDisruptionBudget": builders.pod_disruption_budget(s, n, o),
            "StatefulSet": builders.statefulset(
                s, n, o, self.operator, sts_replicas, voters=voters
            ),
        }


def _hash(manifest: Mapping[str, Any]) -> str:
    return str(manifest["metadata"]["annotations"][builders.SPEC_HASH])


def plan(desired: Desired, observed: Observed, quorum: ObservedQuorum | None = None) -> Action:
    sts = observed.statefulset
    static = desired.operator.static_quorum
    if sts is not None:
        start_replicas = sts.replicas
    else:  # a static quorum starts whole: its voters must all exist to elect a leader
        start_replicas = desired.spec.replicas if static else min(1, desired.spec.replicas)
    manifests = desired.manifests(start_replicas)
    # 1. owned objects exist and are current
    for key in ORDER:
        current = (
            sts.obj if key == "StatefulSet" and sts is not None else (observed.objects.get(key))
        )
        want = manifests[key]
        kind_name = f"{want['kind']} {want['metadata']['name']}"
        if current is None:
            return Apply(key, want, create=True, reason=f"{kind_name} is missing")
        if desired.owner.uid not in current.owner_uids:
            raise NotOwned(f"{kind_name} exists and is not owned by this MetadataQuorum")
        if current.spec_hash != _hash(want):
            return Apply(key, want, create=False, reason=f"{kind_name} differs from the spec")
    assert sts is not None
    # 2. every member up before any step
    if sts.observed_generation < sts.generation:
        return Wait("the StatefulSet controller has not observed the latest StatefulSet")
    live = [p for p in observed.pods if not p.terminating]
    if len(live) != sts.replicas or any(p.terminating for p in observed.pods):
        return Wait(f"{len(live)} of {sts.replicas} pods exist")
    unready = sorted(p.name for p in live if not p.ready)
    if unready or sts.ready_replicas < sts.replicas:
        return Wait(f"waiting for pods to be ready: {', '.join(unready) or 'status lagging'}")
    target = desired.spec.replicas
    # 3. scale down first: no point rolling a pod that is about to go
    if sts.replicas > target and not static:
        return ScaleStatefulSet(sts.replicas - 1, f"scaling down toward {target} replicas")
    # 4. OnDelete roll, one pod at a time, highest ordinal first, the quorum's leader last
    if sts.update_revision:
        leader = quorum.leader_id if quorum is not None else -1
        stale = sorted(
            (p for p in live if p.revision != sts.update_revision),
            key=lambda p: (p.ordinal == leader, -p.ordinal),
        )
        if stale:
            if static and (quorum is None or quorum.leader_id < 0):
                return Wait(f"{stale[0].name} runs an old revision; waiting for a leader first")
            return DeletePod(stale[0].name, reason=f"{stale[0].name} runs an old revision")
    # 5. a static quorum's voters are fixed (KIP-853 dynamic voters are not supported yet)
    if static and sts.replicas != target:
        return Refused(
            f"spec.replicas {target} differs from the {sts.replicas} static voters: changing "
            "the voters needs dynamic quorum membership (KIP-853), not supported yet; "
            f"set spec.replicas back to {sts.replicas}"
        )
    # 6. then grow one replica at a time
    if sts.replicas < target:
        return ScaleStatefulSet(sts.replicas + 1, f"scaling up toward {target} replicas")
    return Converged()

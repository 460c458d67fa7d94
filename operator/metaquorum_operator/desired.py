"""What the operator wants to exist for one MetadataQuorum, and planner rule 1 that makes it so.

Role: `Desired` (the parsed spec, names, owner, operator settings and user controls) renders
the owned objects through builders.py; `objects` is the planner's rule 1 (planner.py): the
first owned object that is missing is created, the first stale one (its spec-hash annotation
differs from the rendered one) updated, in `ORDER`. A new StatefulSet has spec.replicas pods
(pod 0 bootstraps alone, the others start as observers and are added one at a time), or one per
static voter for an adopted static quorum.

Invariants: pure (no IO); one Apply at most per call, in `ORDER`; an object with one of our
names that another owner controls is never touched: `NotOwned` is raised instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from metaquorum_operator import builders
from metaquorum_operator.actions import Action, Apply
from metaquorum_operator.model import Controls, Names, OperatorConfig, Owner, QuorumSpec
from metaquorum_operator.observed import Observed

ORDER = ("ConfigMap", "HeadlessService", "ClientService", "PodDisruptionBudget", "StatefulSet")


class NotOwned(Exception):
    """An object with one of our names exists but another owner controls it."""


@dataclass(frozen=True, slots=True)
class Desired:
    spec: QuorumSpec
    names: Names
    owner: Owner
    operator: OperatorConfig = field(default_factory=OperatorConfig)
    controls: Controls = field(default_factory=Controls)

    def manifests(
        self,
        sts_replicas: int,
        formed: bool = False,
        tombstones: frozenset[str] = frozenset(),
        recovery: str = "",
    ) -> dict[str, dict[str, Any]]:
        s, n, o = self.spec, self.names, self.owner
        cm = builders.configmap(s, n, o, formed=formed, tombstones=tombstones, recovery=recovery)
        return {
            "ConfigMap": cm,
            "HeadlessService": builders.headless_service(s, n, o),
            "ClientService": builders.client_service(s, n, o),
            "PodDisruptionBudget": builders.pod_disruption_budget(s, n, o),
            "StatefulSet": builders.statefulset(s, n, o, sts_replicas),
        }


def _hash(manifest: Mapping[str, Any]) -> str:
    return str(manifest["metadata"]["annotations"][builders.SPEC_HASH])


def objects(
    desired: Desired,
    observed: Observed,
    formed: bool,
    tombstones: frozenset[str],
) -> Action | None:
    """Rule 1: create the first missing owned object or update the first stale one; None when
    every one exists and is current."""
    sts = observed.statefulset
    # a new quorum starts with every pod: pod 0 bootstraps alone (--standalone), the others
    # format --no-initial-controllers and wait as observers to be added one at a time (rule 6);
    # an adopted static one with a pod per static voter (no fewer can elect a leader)
    static = desired.spec.static_voter_ids
    first = max(static) + 1 if static else desired.spec.replicas
    manifests = desired.manifests(sts.replicas if sts else first, formed, tombstones)
    for key in ORDER:
        current = sts.obj if key == "StatefulSet" and sts is not None else observed.objects.get(key)
        want = manifests[key]
        kind_name = f"{want['kind']} {want['metadata']['name']}"
        if current is None:
            return Apply(key, want, create=True, reason=f"{kind_name} is missing")
        if desired.owner.uid not in current.owner_uids:
            raise NotOwned(f"{kind_name} exists and is not owned by this MetadataQuorum")
        if current.spec_hash != _hash(want):
            return Apply(key, want, create=False, reason=f"{kind_name} differs from the spec")
    return None

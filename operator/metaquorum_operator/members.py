"""Dangling and duplicate members: pods and voters that do not match, found and named.

Role: pure helper of the status (status.py `membershipProblems`) and the handlers (a Warning
Event per problem when it first appears). Kafka's own controller docs call a controller that
runs outside the voter set, or a voter that is gone, "dangling"; KIP-853 names a replica by
(id, directory id), so one id can show up twice. Three kinds:

- PodNotInQuorum: a pod within spec.replicas is ready yet its node id is neither a voter nor an
  observer the leader sees (it fetches from no one of this quorum: another cluster id, a
  network cut). Not repaired by the operator: the planner adds an observer that fetches
  (rule 6), and this one does not.
- VoterWithoutPod: a voter whose pod cannot run: the pod is unschedulable (Pending: e.g. its
  PVC is bound to a node that is gone), or there is no pod for its id beyond the StatefulSet.
  Not repaired by removing the voter (a majority may need it); the safe steps are the
  documented ones: fix the node or volume, or delete the PVC and the pod (the pod comes back
  empty, joins as an observer and the planner's disk-loss rule replaces the old directory
  once the new one is caught up), or scale down (rule 7 removes voters beyond spec.replicas,
  each only if a caught-up majority stays).
- DuplicateIncarnation: one node id with two directory ids among voters and observers (a disk
  replaced while the old one still runs, a PVC restored from an old snapshot next to a fresh
  one). Only the disk-loss case is repaired (planner rule 5: the pod runs the new directory,
  caught up: the old one is tombstoned, then removed); otherwise named, not acted on.

Invariants: pure (no IO, no clock); problems are sorted by (kind, id), each with a one-line
message naming the safe fix.
"""

from __future__ import annotations

from typing import Any

from metaquorum_operator.observed import Observed, ObservedQuorum

POD_NOT_IN_QUORUM = "PodNotInQuorum"
VOTER_WITHOUT_POD = "VoterWithoutPod"
DUPLICATE = "DuplicateIncarnation"


def problems(
    observed: Observed, quorum: ObservedQuorum | None, replicas: int
) -> list[dict[str, Any]]:
    """The membership problems seen now ({kind, id, message}), [] without a leader."""
    if quorum is None or not quorum.has_leader:
        return []
    out: list[dict[str, Any]] = []
    voters = {v.id for v in quorum.voters}
    seen = voters | {o.id for o in quorum.observers}
    pods = {p.ordinal: p for p in observed.pods if not p.terminating}
    sts = observed.statefulset
    for i, p in sorted(pods.items()):
        if i < replicas and p.ready and i not in seen:
            out.append(
                {
                    "kind": POD_NOT_IN_QUORUM,
                    "id": i,
                    "message": f"{p.name} is ready but node {i} is neither a voter nor an"
                    " observer of this quorum: check its cluster id and network (the operator"
                    " adds it only once it fetches from the leader)",
                }
            )
    for i in sorted(voters):
        pod = pods.get(i)
        why = None
        if pod is not None and pod.unschedulable:
            why = f"its pod {pod.name} cannot be scheduled ({pod.unschedulable})"
        elif pod is None and sts is not None and i >= sts.replicas:
            why = "no pod of the StatefulSet has this id"
        if why is not None:
            out.append(
                {
                    "kind": VOTER_WITHOUT_POD,
                    "id": i,
                    "message": f"voter {i}: {why}; not removed (a majority may need it): fix"
                    " the node or volume, or delete the pod's PVC and the pod so it rejoins"
                    " empty and replaces its old directory",
                }
            )
    dirs: dict[int, set[str]] = {}
    for r in (*quorum.voters, *quorum.observers):
        dirs.setdefault(r.id, set()).add(r.directory_id)
    for i, ds in sorted(dirs.items()):
        if len(ds) > 1:
            names = ", ".join(sorted(d or "(none)" for d in ds))
            out.append(
                {
                    "kind": DUPLICATE,
                    "id": i,
                    "message": f"node {i} has {len(ds)} incarnations ({names}): repaired only"
                    " when its pod runs the newer one caught up (the old is then removed);"
                    " otherwise stop the stray process",
                }
            )
    return out


def new_problems(
    previous: list[dict[str, Any]] | None, now: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The problems in `now` that `previous` (the last status written) did not have."""
    before = {(p.get("kind"), p.get("id")) for p in previous or []}
    return [p for p in now if (p["kind"], p["id"]) not in before]

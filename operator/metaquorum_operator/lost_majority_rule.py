"""Planner rule 0b: a lost majority, and the recovery the user asked for (issue 31).

Role: the dispatch between the pure parts of the lost-majority handling, in the planner's order
(planner.py; docs/operator.md, "Lost majority"): with no leader, a recovery request in the
ConfigMap is seen through (recovery.step); a lost majority (quorum_lost.py) is `QuorumLost`,
unless the annotation metaquorum.dev/recover-from names a survivor the check accepts
(recover_from.py), which starts a recovery (recovery.start: `Recover`); with a leader and no
request left, the annotation is removed (`EndRecovery`).

Invariants: pure (no IO); returns None (the planner's later rules apply) only when no recovery
is under way without a leader and no lost majority is claimed, and the annotation is not left
over from an earlier loss; a rendered ConfigMap carries the request (`render`) so nothing drops
it while no leader answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from metaquorum_operator import recovery
from metaquorum_operator.actions import Action, EndRecovery, QuorumLost
from metaquorum_operator.desired import Desired
from metaquorum_operator.model import RECOVER_FROM_ANNOTATION
from metaquorum_operator.observed import Observed
from metaquorum_operator.quorum_lost import NodeView, lost_majority
from metaquorum_operator.recover_from import check_survivor


def rule(
    desired: Desired, observed: Observed, led: bool, nodes: Sequence[NodeView]
) -> Action | None:
    """Rule 0b, given whether a leader answered (`led`) and the pods' own views (`nodes`)."""

    def render(value: str) -> dict[str, Any]:
        return desired.manifests(1, True, observed.tombstones, value)["ConfigMap"]

    request = recovery.parse(observed.recovery)
    if request is not None and not led:
        return recovery.step(desired.names, observed, request, nodes, render)
    lost = None if led else lost_majority(observed.pods, nodes)
    if lost is not None:
        reason = lost.reason
        if desired.controls.recover_from:
            ordinal, line = check_survivor(
                desired.controls.recover_from, desired.names, lost, nodes
            )
            if ordinal is not None:
                return recovery.start(desired.names, observed, ordinal, line, render)
            reason = f"{reason}; {line}"
        return QuorumLost(reason, lost.voters, lost.empty + lost.unreachable)
    if led and request is None and desired.controls.recover_from:
        # the annotation is a decision taken at one lost majority: left in place it would
        # recover from the same pod at the next one, unasked
        return EndRecovery(
            "the quorum has a leader and no recovery is under way: "
            f"{RECOVER_FROM_ANNOTATION} acts only on the lost majority it was set for"
        )
    return None

"""Static -> dynamic quorum: kraft.version 0 -> 1 (KIP-853), as Kafka 4.1+ does it with
UpdateFeatures (`kafka-features --bootstrap-controller ... upgrade --feature kraft.version=1`).

Role: a pure rule of the planner (planner.py, right after the voter change in flight, rule 4):
a quorum whose finalized kraft.version is 0 (its voters from `controller.quorum.voters`: an
older chart, an adopted quorum) cannot take AddRaftVoter / RemoveRaftVoter. Once every voter
reports a directory id and is caught up, the operator sends UpdateFeatures kraft.version=1 to
the leader (`UpgradeKraftVersion`; the leader writes the KRaftVersionRecord and a VotersRecord
naming each voter with its directory id); from then on it is managed as a dynamic quorum. Until
then: Refused (code `MigrationBlocked`, Degraded) naming the voters that block it and the fix.
A static voter set names ids only, so DescribeQuorum shows no directory id for its voters (as
Kafka's): a voter's directory id is the one its node reports on GET /status
(`ObservedQuorum.directory_of`); the leader checks the same (each voter's UpdateRaftVoter) and
refuses the upgrade until it has them all (the action fails, an Event, retried next step).

Invariants: pure; acts only on a finalized kraft.version of exactly 0 read from the leader
(None, unknown, never triggers anything); never while a voter is not caught up (the upgrade is
committed by a majority, and a voter without a directory id would be left out of the
VotersRecord).
"""

from __future__ import annotations

from metaquorum_operator.actions import Action, Refused, UpgradeKraftVersion
from metaquorum_operator.observed import ObservedQuorum, VoterKey

BLOCKED = "MigrationBlocked"


def step(quorum: ObservedQuorum, healthy: frozenset[VoterKey]) -> Action | None:
    """UpgradeKraftVersion, Refused (MigrationBlocked) or None (nothing to migrate)."""
    if quorum.kraft_version != 0:
        return None
    no_dir = sorted(v.id for v in quorum.voters if not quorum.directory_of(v.id))
    if no_dir:
        ids = ", ".join(map(str, no_dir))
        return Refused(
            f"kraft.version 0 (a static quorum): voters {ids} report no directory id, so it"
            " cannot move to kraft.version 1: restart them on a node version that writes"
            " directory.id to meta.properties (metaquorum does); the operator migrates once every"
            " voter reports one",
            code=BLOCKED,
        )
    lagging = sorted(v.id for v in quorum.voters if v.key not in healthy)
    if lagging:
        ids = ", ".join(map(str, lagging))
        return Refused(
            f"kraft.version 0 (a static quorum): voters {ids} are not caught up, so the"
            " migration to kraft.version 1 waits: bring their pods back (every voter must be"
            " reachable and caught up)",
            code=BLOCKED,
        )
    return UpgradeKraftVersion(
        "kraft.version 0 -> 1 (static -> dynamic quorum): every voter reports a directory id"
        " and is caught up"
    )

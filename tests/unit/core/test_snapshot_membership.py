"""`core/snapshot_membership.py`: the kraft.version and voter set a snapshot carries (KIP-630,
KIP-853), as Kafka's `KafkaRaftClient.createSnapshot` picks them: `kraftVersionAtOffset` and
`voterSetAtOffset(end - 1)`, where the voter set history never yields the static
`controller.quorum.voters` set (Kafka's `VoterSetHistory.valueAtOrBefore`)."""

from __future__ import annotations

from metaquorum.core.ids import ReplicaKey
from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
from metaquorum.core.log import LogEntry
from metaquorum.core.snapshot_membership import snapshot_membership
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
from metaquorum.protocol.messages import KRaftVersionRecord
from metaquorum.protocol.types import Uuid

STATIC = VoterSet.from_endpoints("CONTROLLER", {i: (f"h{i}", 9000 + i) for i in (1, 2, 3)})
UPGRADED = VoterSet.from_nodes(
    VoterNode(
        ReplicaKey(i, str(Uuid(7, i))), (ListenerEndpoint("CONTROLLER", f"h{i}", 9000 + i),), 0, 1
    )
    for i in (1, 2, 3)
)


def _upgraded_at(offset: int) -> KRaftControlRecordStateMachine:
    """A kraft.version 0 static quorum whose leader wrote the upgrade at `offset`, `offset + 1`."""
    control = KRaftControlRecordStateMachine(STATIC, 0)
    control.on_append(
        [
            LogEntry(0, 1, b"x"),
            LogEntry.of_control(offset, 1, KRaftVersionRecord(version=0, kraft_version=1)),
            LogEntry.of_control(offset + 1, 1, UPGRADED.to_voters_record()),
        ]
    )
    return control


def test_a_snapshot_between_the_upgrade_records_has_no_voters_record() -> None:
    """The simulator's `upgrade` mix (seed 1, a snapshot ending at 42, the KRaftVersionRecord
    at 41 and the VotersRecord at 42) found the static set written as a kraft.version 1
    VotersRecord (no directory ids, kraft.version 0-0): Kafka writes none there."""
    control = _upgraded_at(41)
    assert snapshot_membership(control, 42) == (1, None)
    assert snapshot_membership(control, 43) == (1, UPGRADED.to_voters_record())
    assert snapshot_membership(control, 41) == (0, None)


def test_a_bootstrapped_quorum_snapshots_its_bootstrap_voters() -> None:
    """kraft.version 1 from the bootstrap checkpoint (offset -1): that set is in the history
    (Kafka reads the 0-0 checkpoint into it), so a snapshot before any VotersRecord carries it."""
    control = KRaftControlRecordStateMachine(UPGRADED, 1)
    control.on_append([LogEntry(0, 1, b"x")])
    assert snapshot_membership(control, 1) == (1, UPGRADED.to_voters_record())

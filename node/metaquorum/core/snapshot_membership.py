"""What membership a snapshot carries (KIP-630 with KIP-853): the one rule both drivers run.

Role: a snapshot ending at offset `end` (it holds everything below `end`) carries the
kraft.version as of offset `end - 1` and, from kraft.version 1, the voter set as of `end - 1`
(Kafka's `RecordsSnapshotWriter` header: `KRaftVersionRecord` + `VotersRecord` from
`KRaftControlRecordStateMachine.lastVoterSetOffset/voterSetAtOffset(end - 1)`). The runtime's
`SnapshotPolicy` (runtime/snapshot_policy.py) and the simulator's state machine
(sim/cluster.py) both ask this function, so the simulator checks the code a real node runs.
Invariants: a pure function of the replica's control-record history; never the newest set
when a VotersRecord sits at or above `end` (that change is not in the snapshot's prefix); a
kraft.version 0 snapshot has no VotersRecord, and neither has one ending between an upgrade's
KRaftVersionRecord and its VotersRecord (the static `controller.quorum.voters` set is not in
Kafka's voter set history; found by the simulator's `upgrade` mix, issue 33).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
    from metaquorum.protocol.messages import VotersRecord


def snapshot_membership(
    control: KRaftControlRecordStateMachine, end: int
) -> tuple[int, VotersRecord | None]:
    """(kraft.version, VotersRecord or None) for a snapshot of everything below `end`."""
    kraft = control.kraft_version_at(end - 1)
    voters = control.voter_set_at_offset(end - 1)  # never the static set (Kafka's rule)
    record = voters.to_voters_record() if kraft >= 1 and voters and voters.nodes else None
    return kraft, record

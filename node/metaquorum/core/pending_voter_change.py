"""The leader's one pending voter change (KIP-853; Kafka's `AddVoterHandlerState` /
`RemoveVoterHandlerState` and `LeaderState.isOperationPending`): a leaf of plain data.

Role: what an AddRaftVoter or RemoveRaftVoter request left on the leader while it runs: whom it
changes, whom to answer, whether the answer waits for the commit, the offset of the VotersRecord
once appended, and when the operation expires (`controller.quorum.request.timeout.ms`).
Invariants: at most one change is pending per leader (`LeaderData.pending_change`); it is
answered exactly once (`voter_change.finish`); it is committed only once the HW passes its
record's offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from metaquorum.core.ids import ReplicaKey
from metaquorum.core.voter_set import ListenerEndpoint


class ChangeKind(Enum):
    ADD = "add"
    REMOVE = "remove"


@dataclass(slots=True)
class PendingVoterChange:
    kind: ChangeKind
    key: ReplicaKey
    source: int  # who asked, and under which correlation id: answered exactly once
    correlation_id: int
    expire_ms: int
    endpoints: tuple[ListenerEndpoint, ...] = ()
    ack_when_committed: bool = True
    last_offset: int | None = None  # the VotersRecord's offset, once appended
    answered: bool = False  # AddRaftVoter with AckWhenCommitted false: answered at append

    def expired(self, now_ms: int) -> bool:
        return now_ms >= self.expire_ms

    def committed(self, high_watermark: int | None) -> bool:
        return (
            self.last_offset is not None
            and high_watermark is not None
            and high_watermark > self.last_offset
        )

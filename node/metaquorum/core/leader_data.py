"""The leader's mutable data for one term, owned by its `LeaderState` (Kafka's `LeaderState`
owns its voter states, batch accumulator and, with KIP-853, the add/remove-voter handler state).

Role: everything a leader keeps while it leads and drops when it stops: replication progress
and the high watermark (`LeaderProgress`), the voters that fetched in the current check-quorum
window, the batch accumulator (append linger), the long-poll fetch purgatory and the appends
waiting for the HW. Handlers reach it through the state (`LeaderState.data`), never through
attributes of the node.
Invariants: created with the term (`RaftNode.transition_to_leader`), never shared between
terms; leaving leadership fails every pending append and answers every parked fetch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from metaquorum.core.batch_accumulator import BatchAccumulator
from metaquorum.core.config import QuorumConfig
from metaquorum.core.fetch_purgatory import FetchPurgatory
from metaquorum.core.high_watermark import LeaderProgress
from metaquorum.core.ids import ReplicaKey

if TYPE_CHECKING:
    from metaquorum.core.pending_voter_change import PendingVoterChange
    from metaquorum.core.voter_set import VoterSet


class LeaderData:
    __slots__ = (
        "accumulator",
        "fetch_endpoints",
        "fetched_voters",
        "pending_appends",
        "pending_change",
        "progress",
        "purgatory",
        "resign_requested",
        "upgrading_to",
        "volatile_voters",
    )

    def __init__(
        self,
        local_id: int,
        voters: Iterable[int | ReplicaKey],
        epoch_start_offset: int,
        config: QuorumConfig | None = None,
    ) -> None:
        cfg = config or QuorumConfig()
        self.progress = LeaderProgress(local_id, voters, epoch_start_offset)
        self.fetched_voters: set[int] = set()
        self.accumulator = BatchAccumulator(cfg.append_linger_ms, cfg.max_batch_size_bytes)
        self.purgatory: FetchPurgatory[Any] = FetchPurgatory()
        self.pending_appends: dict[int, int] = {}  # append id -> its last offset
        # KIP-853: the one Add/RemoveRaftVoter in progress (core/voter_change.py), and a
        # removed leader's request to resign once its removal commits.
        self.pending_change: PendingVoterChange | None = None
        self.resign_requested = False
        # The kraft.version 0 -> 1 upgrade (core/kraft_upgrade.py): voters as they reported
        # themselves by UpdateRaftVoter (kraft.version 0 only), and the version being written.
        self.volatile_voters: VoterSet | None = None
        self.upgrading_to: int | None = None
        # The NodeEndpoints every Fetch response of this leadership carries (discovery.py).
        self.fetch_endpoints: list[Any] | None = None

    @classmethod
    def empty(cls) -> LeaderData:
        """Placeholder data for a LeaderState built outside a node (tests, tools)."""
        return cls(-1, (), 0)

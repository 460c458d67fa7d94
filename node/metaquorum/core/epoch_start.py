"""The records a new leader opens its epoch with (KIP-595 §LeaderChange; KIP-853; Kafka's
`LeaderState.appendStartOfEpochControlRecords`).

Role: one control batch at the epoch's first offset: a LeaderChangeMessage naming the leader,
every current voter and the voters that granted its election; and, when the quorum runs
kraft.version >= 1 and either the voter set is not in the log yet (it came from the bootstrap
checkpoint: offset -1) or the leader's own entry in it differs from what it runs with
(endpoints, supported kraft.version range), a KRaftVersionRecord and the VotersRecord with the
leader's entry updated.
Invariants: written before anything else of the epoch, at consecutive offsets from its start;
in a kraft.version 0 quorum the batch is the LeaderChange alone (byte-identical to before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.log import LogEntry, leader_change_message
from metaquorum.protocol.messages import KRaftVersionRecord

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def start_of_epoch_entries(
    ctx: RaftContext, start: int, epoch: int, granted: frozenset[int]
) -> list[LogEntry]:
    voters = ctx.voters
    message = leader_change_message(ctx.local.id, voters.voter_ids, granted)
    entries = [LogEntry.of_control(start, epoch, message)]
    control = ctx.control
    kraft_version = control.latest_kraft_version()
    if kraft_version < 1:
        return entries
    local = ctx.local.voter_node()
    if control.latest_voters_offset() != -1 and not voters.voter_node_needs_update(local):
        return entries
    updated = voters.update_voter(local)
    if updated is None:  # Kafka's IllegalStateException: a leader is always a voter
        raise AssertionError(f"leader {local.key} is not in its voter set {voters}")
    kraft = KRaftVersionRecord(version=0, kraft_version=kraft_version)
    entries.append(LogEntry.of_control(start + 1, epoch, kraft))
    entries.append(LogEntry.of_control(start + 2, epoch, updated.to_voters_record()))
    return entries

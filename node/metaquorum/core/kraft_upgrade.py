"""The kraft.version 0 -> 1 upgrade (KIP-853; Kafka's `KRaftVersionUpgrade` and
`LeaderState.maybeAppendUpgradedKRaftVersion`).

Role: a kraft.version 0 quorum has no directory ids in its (static) voter set and no
VotersRecord. Each voter tells every new leader who it is with UpdateRaftVoter (directory id,
endpoints, supported kraft.version range); the leader keeps those answers in memory only (the
"volatile voters", `LeaderData.volatile_voters`, starting from its voter set at the epoch
start). `UpgradeKRaftVersion(epoch, 1)` then appends, in one batch, KRaftVersionRecord(1) and
the VotersRecord of the volatile voters, provided they are the same ids as the persisted set,
every one supports kraft.version 1 and every one has a directory id.
Invariants: only a leader of the request's epoch upgrades; a downgrade or an upgrade to another
version while one is pending is refused; the records are appended once (a repeat is a no-op);
the volatile voters live and die with the leader's term.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.effects import KRaftVersionUpgrade
from metaquorum.core.events import UpgradeKRaftVersion
from metaquorum.core.log import LogEntry
from metaquorum.core.states import LeaderState
from metaquorum.core.voter_set import VoterNode
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import KRaftVersionRecord

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def update_volatile_voter(ctx: RaftContext, voter: VoterNode) -> Errors:
    """UpdateRaftVoter on a kraft.version 0 leader: remember the voter in memory."""
    st = ctx.state
    assert isinstance(st, LeaderState)
    volatile = st.data.volatile_voters
    if volatile is None:
        return Errors.REQUEST_TIMED_OUT  # the upgrade is written: no longer kraft.version 0
    updated = volatile.update_voter_ignoring_directory_id(voter)
    if updated is None:
        return Errors.VOTER_NOT_FOUND
    st.data.volatile_voters = updated
    return Errors.NONE


def handle_upgrade(ctx: RaftContext, event: UpgradeKRaftVersion) -> None:
    error = _upgrade(ctx, event)
    ctx.emit(KRaftVersionUpgrade(event.version, error))


def _upgrade(ctx: RaftContext, event: UpgradeKRaftVersion) -> str | None:
    st = ctx.state
    if not isinstance(st, LeaderState) or st.epoch != event.epoch:
        return f"not the leader of epoch {event.epoch}"
    data = st.data
    pending = data.upgrading_to
    if pending is not None:
        return None if pending == event.version else f"an upgrade to {pending} is pending"
    persisted = ctx.control.latest_kraft_version()
    if persisted == event.version:
        return None
    if persisted > event.version:
        return f"kraft.version {event.version} would be a downgrade from {persisted}"
    volatile = data.volatile_voters
    if volatile is None or event.version != 1:
        return f"cannot upgrade kraft.version {persisted} to {event.version}"
    if volatile.voter_ids != ctx.voters.voter_ids:
        return f"voters {volatile.sorted_ids()} differ from {ctx.voters.sorted_ids()}"
    if not volatile.supports_version(event.version):
        return f"not all of the voters support kraft.version {event.version} yet"
    if any(k.directory_id is None for k in volatile.voter_keys()):
        return "the directory id of every voter must be known (UpdateRaftVoter from each)"
    if event.validate_only:
        return None
    data.upgrading_to = event.version
    data.volatile_voters = None
    start = ctx.log.end_offset
    record = KRaftVersionRecord(version=0, kraft_version=event.version)
    ctx.append_as_leader(
        [
            LogEntry.of_control(start, st.epoch, record),
            LogEntry.of_control(start + 1, st.epoch, volatile.to_voters_record()),
        ]
    )
    return None

"""The voter set and kraft.version by offset, fed by the log (KIP-853; Kafka's
`KRaftControlRecordStateMachine`).

Role: a `LogChangeListener` on the core's `RaftLog`. A VotersRecord or KRaftVersionRecord takes
effect when it is *appended*, not when it commits (KIP-853 §Reconfiguration): on the leader and
on every follower alike. A truncation removes what it cut (an uncommitted change reverts). A
snapshot installed or loaded replaces the history by the records it carries, at its end offset
minus one; a snapshot created from this log keeps the history (entries below its end become
unreachable but stay). The start-up set (bootstrap checkpoint or static voters) sits at offset
-1 with the start-up kraft.version: the history's first entry until a snapshot with records
replaces it, and what a snapshot without records falls back to.
Invariants: offsets strictly increase in both histories; `voters_at(o)` / `kraft_version_at(o)`
are the newest entries at or below `o`; `latest_voters()` is the set as of the log's end, the
one every reader of membership uses (is-voter, tallies, HW majority, check-quorum, whom to send
BeginQuorumEpoch, who may campaign); `version` changes whenever `latest_voters()` may have.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from metaquorum.core.log import EntryKind, LogEntry, Snapshot
from metaquorum.core.voter_set import VoterSet, VoterSetHistory
from metaquorum.protocol.control_records import snapshot_control
from metaquorum.protocol.messages import KRaftVersionRecord, VotersRecord


class KRaftControlRecordStateMachine:
    __slots__ = ("_kraft_offsets", "_kraft_versions", "_startup", "voter_history")

    def __init__(self, voters: VoterSet, kraft_version: int = 0) -> None:
        self._startup = (voters, kraft_version)
        self.voter_history = VoterSetHistory(voters)
        self._kraft_offsets: list[int] = [-1]
        self._kraft_versions: list[int] = [kraft_version]

    # --- readers -----------------------------------------------------------------------------
    def latest_voters(self) -> VoterSet:
        return self.voter_history.latest()

    def latest_voters_offset(self) -> int:
        """The offset of the newest voter set (-1: the start-up set, not in the log)."""
        return self.voter_history.latest_offset()

    def voters_at(self, offset: int) -> VoterSet:
        return self.voter_history.at(offset)

    def voter_set_at_offset(self, offset: int) -> VoterSet | None:
        """Kafka's `voterSetAtOffset`: the set in effect at `offset` from the log, a snapshot or
        the bootstrap checkpoint (kraft.version 1 at start-up), never the static
        `controller.quorum.voters` set of a kraft.version 0 start (None then)."""
        if self.voter_history.offset_at(offset) == -1 and self._startup[1] < 1:
            return None
        return self.voter_history.at(offset)

    def latest_kraft_version(self) -> int:
        return self._kraft_versions[-1]

    def kraft_version_at(self, offset: int) -> int:
        i = max(0, bisect_right(self._kraft_offsets, offset) - 1)
        return self._kraft_versions[i]

    # --- LogChangeListener -------------------------------------------------------------------
    def on_append(self, entries: Sequence[LogEntry]) -> None:
        for e in entries:
            if e.kind is EntryKind.KRAFT_VOTERS:
                assert isinstance(e.control, VotersRecord)
                self.voter_history.add_at(e.offset, VoterSet.from_voters_record(e.control))
            elif e.kind is EntryKind.KRAFT_VERSION:
                assert isinstance(e.control, KRaftVersionRecord)
                self._kraft_offsets.append(e.offset)
                self._kraft_versions.append(e.control.kraft_version)

    def on_truncate(self, end_offset: int) -> None:
        self.voter_history.truncate_from(end_offset)
        while len(self._kraft_offsets) > 1 and self._kraft_offsets[-1] >= end_offset:
            self._kraft_offsets.pop()
            self._kraft_versions.pop()

    def on_snapshot(self, snapshot: Snapshot, installed: bool) -> None:
        if installed:
            self.load_snapshot(snapshot)

    def load_snapshot(self, snapshot: Snapshot) -> None:
        """A snapshot restarts the log: the history starts over from the start-up values,
        then the snapshot's records at its end offset - 1 (a kraft.version 0 snapshot has
        none), as Kafka clears both histories and reads the snapshot."""
        kraft, voters = snapshot_control(snapshot.payload)
        at = snapshot.snapshot_id.offset - 1
        start_voters, start_kraft = self._startup
        if voters is not None and voters.voters:
            self.voter_history.reset(at, VoterSet.from_voters_record(voters))
        else:
            self.voter_history.reset(-1, start_voters)
        if kraft is not None:
            self._kraft_offsets, self._kraft_versions = [at], [kraft.kraft_version]
        else:
            self._kraft_offsets, self._kraft_versions = [-1], [start_kraft]

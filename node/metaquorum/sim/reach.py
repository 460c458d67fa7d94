"""How far a simulation run reached: which protocol paths ran and which worst moments arose.

Role: a bug planted on a path the mixes never take survives every seed, so each run counts,
per replica step, the protocol paths it went through (`PATHS`: each RPC handled, each
transition, votes and pre-votes granted or refused, truncation on divergence, snapshots
written and installed, voter additions, removals and endpoint updates committed, the
kraft.version upgrade, resignation by check-quorum or after the leader's own removal) and the
worst moments (`MOMENTS`: sim/buggify.py's, plus the situations issue 33 aims at: a replica
restarted after persisting a vote hearing a competing candidate of that epoch, a leader cut off
from a majority of its voters right after a removal, a kraft.version 1 snapshot below a voter
change). `python -m metaquorum.sim.reach` prints the table per mix; docs/sim-reach.md holds it.
Invariants: counting never changes the run (no RNG draw, no event queued); a committed change
is counted once per run, when the first leader's HW passes it; every name counted is listed in
`PATHS` or `MOMENTS`, so a never-reached one shows as 0.
"""

from __future__ import annotations

from metaquorum.core import effects as fx
from metaquorum.core import events as ev
from metaquorum.core.log import EntryKind
from metaquorum.core.node import RaftNode
from metaquorum.core.states import (
    ElectionState,
    EpochState,
    LeaderState,
    ProspectiveState,
    ResignedState,
)
from metaquorum.protocol import messages as msgs

RPCS = (
    "Vote",
    "PreVote",
    "BeginQuorumEpoch",
    "EndQuorumEpoch",
    "Fetch",
    "FetchSnapshot",
    "AddRaftVoter",
    "RemoveRaftVoter",
    "UpdateRaftVoter",
)
ROLES = ("Unattached", "Prospective", "Candidate", "Leader", "Follower", "Resigned")
PATHS = (
    *(f"rpc:{r}" for r in RPCS),
    *(f"to:{r}" for r in ROLES),
    "vote-granted",
    "vote-refused",
    "pre-vote-granted",
    "pre-vote-refused",
    "pre-vote-asked-again",
    "truncate-on-divergence",
    "snapshot-written",
    "snapshot-installed",
    "update-voter-sent",
    "voter-add-committed",
    "voter-remove-committed",
    "voter-update-committed",
    "kraft-upgrade-asked",
    "kraft-upgrade-refused",
    "kraft-upgrade-committed",
    "resign-check-quorum",
    "resign-after-removal",
)
MOMENTS = (
    "vote-persisted",
    "crashed-at-vote-persisted",
    "append-unflushed",
    "crashed-at-append-unflushed",
    "leader-voter-change",
    "crashed-at-leader-voter-change",
    "snapshot-written",
    "crashed-at-snapshot-written",
    "vote-restart-competing",
    "leader-cut-after-removal",
    "leader-cut-off",
    "snapshot-kraft1-below-voter-change",
    "endpoint-moved",
)
_RPC_NAMES = {
    msgs.BeginQuorumEpochRequestData: "rpc:BeginQuorumEpoch",
    msgs.EndQuorumEpochRequestData: "rpc:EndQuorumEpoch",
    msgs.FetchRequestData: "rpc:Fetch",
    msgs.FetchSnapshotRequestData: "rpc:FetchSnapshot",
    msgs.AddRaftVoterRequestData: "rpc:AddRaftVoter",
    msgs.RemoveRaftVoterRequestData: "rpc:RemoveRaftVoter",
    msgs.UpdateRaftVoterRequestData: "rpc:UpdateRaftVoter",
}
# The effects `observe` looks at (a dict lookup per effect: it runs after every step).
_WATCHED: dict[type, type] = {
    t: t
    for t in (
        fx.HighWatermarkAdvanced,
        fx.TruncateLog,
        fx.WriteSnapshot,
        fx.InstallSnapshot,
        fx.SendRequest,
        fx.KRaftVersionUpgrade,
    )
}


class Reach:
    """The counts of one run: `paths` (protocol paths) and `moments` (worst moments)."""

    def __init__(self) -> None:
        self.paths: dict[str, int] = {}
        self.moments: dict[str, int] = {}
        self.committed_scanned = 0  # committed changes are counted below this offset
        # node -> (epoch, candidate) of the vote it found on disk at its last boot
        self.boot_vote: dict[int, tuple[int, int]] = {}

    def hit(self, name: str) -> None:
        self.paths[name] = self.paths.get(name, 0) + 1

    def moment(self, name: str) -> None:
        self.moments[name] = self.moments.get(name, 0) + 1

    def on_boot(self, nid: int, election: ElectionState | None) -> None:
        self.boot_vote.pop(nid, None)
        voted = None if election is None else election.voted_key
        if election is not None and voted is not None and voted.id != nid:
            self.boot_vote[nid] = (election.epoch, voted.id)

    def observe(
        self, nid: int, node: RaftNode, event: ev.Event, before: EpochState, step: fx.Step
    ) -> None:
        """Count what replica `nid`'s step (`event` handled in state `before`) went through."""
        paths = self.paths
        after = node.state
        if after.role is not before.role:
            name = "to:" + after.role.value
            paths[name] = paths.get(name, 0) + 1
            if isinstance(before, LeaderState) and isinstance(after, ResignedState):
                if before.data.resign_requested:
                    self.hit("resign-after-removal")
                elif node.now_ms >= before.check_quorum_deadline_ms:
                    self.hit("resign-check-quorum")
        if type(event) is ev.RequestReceived:
            self._request(nid, node, event, step)
        fetched = type(event) is ev.ResponseReceived and isinstance(
            event.message, msgs.FetchResponseData
        )
        watched = _WATCHED
        for eff in step.effects:
            kind = watched.get(type(eff))
            if kind is None:
                continue
            if kind is fx.HighWatermarkAdvanced:
                assert isinstance(eff, fx.HighWatermarkAdvanced)
                if isinstance(after, LeaderState):
                    self._committed(node, eff.high_watermark)
            elif kind is fx.TruncateLog:
                if fetched:
                    self.hit("truncate-on-divergence")
            elif kind is fx.WriteSnapshot:
                assert isinstance(eff, fx.WriteSnapshot)
                self.hit("snapshot-written")
                end = eff.snapshot.snapshot_id.offset
                control = node.control
                if control.kraft_version_at(end - 1) >= 1 and control.latest_voters_offset() >= end:
                    self.moment("snapshot-kraft1-below-voter-change")
            elif kind is fx.InstallSnapshot:
                self.hit("snapshot-installed")
            elif kind is fx.SendRequest:
                assert isinstance(eff, fx.SendRequest)
                if type(eff.message) is msgs.UpdateRaftVoterRequestData:
                    self.hit("update-voter-sent")
                elif (
                    isinstance(before, ProspectiveState)
                    and isinstance(after, ProspectiveState)
                    and eff.destination in after.tally.asked_again - before.tally.asked_again
                ):
                    self.hit("pre-vote-asked-again")  # split-vote avoidance (vote_tally.py)
            else:
                assert isinstance(eff, fx.KRaftVersionUpgrade)
                self.hit("kraft-upgrade-asked")
                if eff.error is not None:
                    self.hit("kraft-upgrade-refused")

    def _request(self, nid: int, node: RaftNode, event: ev.RequestReceived, step: fx.Step) -> None:
        msg = event.message
        if not isinstance(msg, msgs.VoteRequestData):
            name = _RPC_NAMES.get(type(msg))
            if name is not None:
                self.hit(name)
            return
        if not msg.topics or not msg.topics[0].partitions:
            return
        rq = msg.topics[0].partitions[0]
        prefix = "pre-vote" if rq.pre_vote else "vote"
        self.hit("rpc:PreVote" if rq.pre_vote else "rpc:Vote")
        booted = self.boot_vote.get(nid)
        if (
            not rq.pre_vote
            and booted is not None
            and booted[0] == rq.replica_epoch
            and booted[1] != rq.replica_id
        ):
            self.moment("vote-restart-competing")
        for eff in step.effects:
            if isinstance(eff, fx.SendResponse) and isinstance(eff.message, msgs.VoteResponseData):
                rs = eff.message.topics
                granted = bool(rs and rs[0].partitions and rs[0].partitions[0].vote_granted)
                self.hit(f"{prefix}-granted" if granted else f"{prefix}-refused")

    def _committed(self, node: RaftNode, hw: int) -> None:
        """Count the membership changes between what was counted and the leader's new HW."""
        log = node.log
        control = node.control
        first = max(self.committed_scanned, log.start_offset)
        if hw <= first:
            return
        last = min(hw, log.end_offset)
        base = max(first - 1, log.start_offset)  # the entry before `first` is looked at too
        entries = log.read(base, last - base) if last > base else []
        for o in range(first, min(hw, log.end_offset)):
            e = entries[o - base]
            if e.kind is EntryKind.KRAFT_VERSION:
                if control.kraft_version_at(o) > control.kraft_version_at(o - 1):
                    self.hit("kraft-upgrade-committed")
            elif (
                e.kind is EntryKind.KRAFT_VOTERS
                and control.kraft_version_at(o - 1) >= 1
                and not (o > base and entries[o - 1 - base].kind is EntryKind.KRAFT_VERSION)
            ):  # (a set right after a KRaftVersionRecord is the upgrade's or an epoch's start)
                old, new = control.voters_at(o - 1), control.voters_at(o)
                if new.voter_ids > old.voter_ids:
                    self.hit("voter-add-committed")
                elif new.voter_ids < old.voter_ids:
                    self.hit("voter-remove-committed")
                elif new != old:
                    self.hit("voter-update-committed")
        self.committed_scanned = max(self.committed_scanned, hw)

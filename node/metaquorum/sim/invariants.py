"""Safety invariants checked after every simulated event (reliability reference §5.3).

Role: watch every node's state and effects and record a `Violation` (with the event index)
when one of these breaks:
- `single-leader`: at most one leader per epoch;
- `epoch-monotonic`: a node's epoch never decreases, across restarts too (quorum-state);
- `hw-monotonic`: a node's HW never decreases within one incarnation;
- `hw-majority-flushed`: when a leader's HW moves to h, a majority of the voters that govern it
  have the entry at h-1 (same epoch) *flushed* on disk: the voters *as of offset h-1* in a
  static quorum (the checker's voter-set history); with KIP-853 the voter set as of the end of
  the leader's log (Raft's rule: the newest set in the log, committed or not), read from the
  log, not from the leader's progress (`voter-set-agreement` in sim/membership.py checks that
  every replica derives the same sets from the log);
- `hw-own-epoch`: a leader exposes a HW only above its epoch start offset (its own record);
- `log-matching`: an entry at (offset, epoch) is the same everywhere, with the same previous
  epoch (so equal entries imply equal prefixes);
- `committed-stable`: the committed prefix (below any reported HW) is the same on every node
  and never changes; every acknowledged append is in it at its acknowledged offset;
- `vote-durable` / `single-vote`: a granted vote is on disk before its reply leaves, and a node
  never grants two candidates in one epoch, crashes included;
- `ack-durable`: a Fetch (which acknowledges its offset) leaves only when that offset is flushed;
- `snapshot-consistent`: a snapshot written or installed holds exactly the committed prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from metaquorum.core.log import LogEntry
from metaquorum.core.node import RaftNode
from metaquorum.core.states import LeaderState
from metaquorum.core.voter_set import VoterSet, VoterSetHistory
from metaquorum.protocol.messages import VoteRequestData, VoteResponseData
from metaquorum.sim.disk import MemoryDisk


@dataclass(frozen=True, slots=True)
class Violation:
    event_index: int
    time_ms: int
    kind: str
    detail: str


class InvariantChecker:
    def __init__(self, voters: VoterSetHistory | frozenset[int]):
        # The voter set as of each offset (KIP-853 changes it through the log); a frozen set
        # is a history of one bootstrap set.
        if isinstance(voters, VoterSetHistory):
            self.history = voters
        else:
            self.history = VoterSetHistory(VoterSet.of(voters))

        self.dynamic = False  # KIP-853 runs: the governing set is the leader's (see above)
        # KIP-853 runs: did voter v acknowledge offset hw-1 and lose its disk since? (Its copy
        # counted when it was made; the replica can no longer vote under that key.)
        self.lost_since_ack: Callable[[int, LeaderState, int], bool] | None = None
        self.generation: dict[int, int] = {}  # a wiped replica is a new one (new directory)
        self.violations: list[Violation] = []
        self.leaders: dict[int, int] = {}
        self.max_epoch: dict[int, int] = {}
        self.last_hw: dict[int, int] = {}
        self.entry_index: dict[tuple[int, int], tuple[bytes, int]] = {}
        self.committed: list[LogEntry] = []
        # Data batches of committed prefixes by (end, first offset), for sim/snapshots.py.
        self.snapshot_data: dict[tuple[int, int], bytes] = {}
        self.votes: dict[tuple[int, int, int], int] = {}
        self.verified: dict[int, int] = {}
        self.event_index = 0
        self.now_ms = 0

    def voters_at(self, offset: int) -> frozenset[int]:
        """The voters whose majority commits the entry at `offset`."""
        return self.history.at(offset).voter_ids

    @property
    def voters(self) -> frozenset[int]:
        return self.history.latest().voter_ids

    def fail(self, kind: str, detail: str) -> None:
        if len(self.violations) < 20:
            self.violations.append(Violation(self.event_index, self.now_ms, kind, detail))

    # --- per step ----------------------------------------------------------------------------
    def after_step(self, nid: int, node: RaftNode) -> None:
        st = node.state
        epoch = st.epoch
        if epoch < self.max_epoch.get(nid, 0):
            self.fail("epoch-monotonic", f"node {nid} at epoch {epoch} after {self.max_epoch[nid]}")
        else:
            self.max_epoch[nid] = epoch
        if isinstance(st, LeaderState):
            other = self.leaders.setdefault(epoch, nid)
            if other != nid:
                self.fail("single-leader", f"epoch {epoch} has leaders {other} and {nid}")
        hw = node.high_watermark
        if hw is not None:
            if hw < self.last_hw.get(nid, -1):
                self.fail("hw-monotonic", f"node {nid} HW {hw} after {self.last_hw[nid]}")
            self.last_hw[nid] = hw

    def on_wipe(self, nid: int) -> None:
        """A wiped disk: a new replica under the same id (KIP-853: a new directory id), whose
        epoch starts over and whose votes are its own."""
        self.generation[nid] = self.generation.get(nid, 0) + 1
        self.max_epoch.pop(nid, None)

    def on_restart(self, nid: int) -> None:
        """A new incarnation: its HW starts over and its log is checked again from 0."""
        self.last_hw.pop(nid, None)
        self.verified.pop(nid, None)

    def on_append(self, nid: int, disk: MemoryDisk, entries: tuple[LogEntry, ...]) -> None:
        """Called after the disk appended `entries`."""
        for e in entries:
            prev_epoch = disk.epoch_at(e.offset - 1) if e.offset > 0 else -1
            prev = -2 if prev_epoch is None else prev_epoch
            key = (e.offset, e.epoch)
            seen = self.entry_index.get(key)
            if seen is None:
                self.entry_index[key] = (e.value, prev)
            elif seen != (e.value, prev):
                self.fail("log-matching", f"node {nid} entry {key} differs from an earlier copy")

    def on_high_watermark(
        self, nid: int, node: RaftNode, hw: int, disks: dict[int, MemoryDisk]
    ) -> None:
        st = node.state
        log = node.log
        if isinstance(st, LeaderState):
            if hw <= st.epoch_start_offset:
                self.fail(
                    "hw-own-epoch", f"leader {nid} HW {hw} <= epoch start {st.epoch_start_offset}"
                )
            last_epoch = log.entry(hw - 1).epoch
            holders = 0
            voters = node.voters.voter_ids if self.dynamic else self.voters_at(hw - 1)
            for v in voters:
                d = disks[v]
                if d.flushed >= hw and d.epoch_at(hw - 1) == last_epoch:
                    holders += 1
                elif d.snapshot is not None and d.snapshot.snapshot_id.offset >= hw:
                    holders += 1  # inside a durable snapshot (checked against committed data)
                elif self.lost_since_ack is not None and self.lost_since_ack(v, st, hw):
                    holders += 1
            if holders < len(voters) // 2 + 1:
                self.fail(
                    "hw-majority-flushed", f"leader {nid} HW {hw} flushed on {holders} voters"
                )
        committed = self.committed
        upto = min(hw, log.end_offset)
        start = max(self.verified.get(nid, 0), log.start_offset)
        base = max(min(start, len(committed)), log.start_offset)  # read only what is checked
        entries = log.read(base, upto - base) if upto > base else []
        for o in range(start, min(len(committed), upto)):
            if committed[o] != entries[o - base]:
                self.fail("committed-stable", f"node {nid} offset {o} differs from committed data")
                return
        for o in range(len(committed), upto):
            committed.append(entries[o - base])
        self.verified[nid] = max(start, upto)

    def on_snapshot(self, nid: int, offset: int, payload: bytes, expected: bytes | None) -> None:
        """A snapshot below `offset` must hold exactly the committed data below it."""
        if expected is None or payload != expected:
            self.fail(
                "snapshot-consistent",
                f"node {nid} snapshot at {offset} is not the committed prefix",
            )

    def on_append_committed(self, nid: int, offset: int, value: bytes) -> None:
        if offset >= len(self.committed) or self.committed[offset].value != value:
            self.fail("committed-stable", f"acknowledged append at {offset} not in committed data")

    def on_vote_response(
        self, nid: int, request: VoteRequestData | None, msg: VoteResponseData, disk: MemoryDisk
    ) -> None:
        """Node `nid` answers `request` (the VoteRequest it is handling, if any) with `msg`."""
        if request is None or not msg.topics or not msg.topics[0].partitions:
            return
        p = msg.topics[0].partitions[0]
        rq = request.topics
        rp = rq[0].partitions[0] if rq and rq[0].partitions else None
        if p.vote_granted and rp is not None and not rp.pre_vote:
            self.on_vote_granted(nid, rp.replica_epoch, rp.replica_id, disk)

    def on_vote_granted(self, nid: int, epoch: int, candidate: int, disk: MemoryDisk) -> None:
        prev = self.votes.setdefault((nid, self.generation.get(nid, 0), epoch), candidate)
        if prev != candidate:
            self.fail(
                "single-vote", f"node {nid} voted for {prev} and {candidate} in epoch {epoch}"
            )
        e = disk.election
        if e is None or e.epoch != epoch or e.voted_key is None or e.voted_key.id != candidate:
            self.fail(
                "vote-durable", f"node {nid} granted {candidate} in epoch {epoch} before persisting"
            )

    def on_fetch_sent(self, nid: int, fetch_offset: int, disk: MemoryDisk) -> None:
        if disk.flushed < fetch_offset:
            self.fail(
                "ack-durable", f"node {nid} fetched at {fetch_offset}, flushed {disk.flushed}"
            )

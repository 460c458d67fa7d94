"""The discrete-event simulation of one KRaft cluster: one queue, one virtual clock.

Role: own N replicas' cores (`RaftNode`), their in-memory disks, the network and the fault
schedule; deliver events in time order, perform each step's effects, and run the invariant
checker after every event. Deterministic: every random choice comes from RNGs derived from
the seed, and ties in the queue break by insertion order.
Invariants of the driver itself: effects are performed in order; `PersistElectionState` is
durable before anything after it; a flush completes after a random latency and only makes
durable what is on the disk at that moment; a crashed node's pending events are dropped;
responses only reach the incarnation that sent the request (correlation ids are unique per
incarnation).
"""

from __future__ import annotations

import hashlib
import heapq
import random
from typing import Any

from metaquorum.core.effects import (
    AppendCommitted,
    AppendEntries,
    AppendFailed,
    FlushLog,
    HighWatermarkAdvanced,
    InstallSnapshot,
    LeaderChanged,
    PersistElectionState,
    SendRequest,
    SendResponse,
    Step,
    TruncateLog,
    VotersChanged,
    WriteSnapshot,
)
from metaquorum.core.events import (
    ClientAppend,
    CreateSnapshot,
    Event,
    Flushed,
    Poll,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
)
from metaquorum.core.log import RaftLog
from metaquorum.core.node import RaftNode
from metaquorum.core.states import LeaderState
from metaquorum.core.voter_set import VoterSet
from metaquorum.protocol.messages import (
    ApiVersionsRequestData,
    FetchRequestData,
    VoteRequestData,
    VoteResponseData,
)
from metaquorum.sim import buggify, membership
from metaquorum.sim.disk import MemoryDisk
from metaquorum.sim.invariants import InvariantChecker
from metaquorum.sim.network import Network
from metaquorum.sim.params import SimParams
from metaquorum.sim.snapshots import committed_snapshot

POLL, REQUEST, RESPONSE, FLUSH, FAULT, APPEND, CHECK, FAILED, SNAPSHOT, MEMBERSHIP = range(10)
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


class Simulation:
    def __init__(self, params: SimParams):
        self.params = params
        self.rng = random.Random(params.seed)
        self.net = Network(random.Random(self.rng.getrandbits(64)), params.link)
        self.voter_ids = list(range(1, params.voters + 1))
        self.all_ids = list(range(1, params.voters + params.observers + 1))
        self.cluster_id = CLUSTER_ID
        self.bootstrap_ids = frozenset(self.voter_ids)
        # KIP-853 (sim/membership.py): directory ids (a wipe draws a new one), the bootstrap
        # voter set with them, the operator's requests in flight and their answers.
        self.kraft1 = params.kraft_version >= 1
        self.directory_ids: dict[int, str | None] = dict.fromkeys(self.all_ids)
        if self.kraft1:
            for n in self.all_ids:
                self.directory_ids[n] = membership.new_directory_id(self)
        self.voter_set = (
            membership.bootstrap_voters(self) if self.kraft1 else VoterSet.of(self.voter_ids)
        )
        self.admin_pending: dict[int, tuple[int, int]] = {}  # cid -> (node, incarnation)
        self.admin_answers: dict[int, int] = {}  # error code -> count
        self.next_admin_cid = 0
        self.committed_voters: list[tuple[int, frozenset[int]]] = []
        self.situations: dict[str, int] = {}  # sim/buggify.py: worst moments seen
        self.leader_checked: dict[int, int] = {}  # node -> epoch whose election was checked
        self.removed_leader_since: dict[tuple[int, int], int] = {}
        self.committed_scanned = 0
        self.disks = {n: MemoryDisk() for n in self.all_ids}
        # KIP-853 bootstrap servers: a request to a pseudo-id goes to the node at its endpoint
        # and its answer comes back from the pseudo-id (sim/membership.py `route`).
        self.pseudo: dict[tuple[int, int], int] = {}
        self.nodes: dict[int, RaftNode | None] = {n: None for n in self.all_ids}
        self.incarnation = dict.fromkeys(self.all_ids, 0)
        self.paused_until = dict.fromkeys(self.all_ids, 0)
        self.poll_token = dict.fromkeys(self.all_ids, 0)
        self.poll_at = dict.fromkeys(self.all_ids, -1)
        self.checker = InvariantChecker(frozenset(self.voter_ids))
        self.checker.dynamic = params.kraft_version >= 1
        if self.checker.dynamic:
            self.checker.lost_since_ack = lambda v, st, hw: membership.lost_since_ack(
                self, v, st, hw
            )
        self.queue: list[tuple[int, int, int, int, Any]] = []
        self.seq = 0
        self.now = 0
        self.events = 0
        self.hash = hashlib.sha256()
        self.trace: list[str] | None = [] if params.trace else None
        # metrics
        self.elections = 0
        self.first_leader_ms: int | None = None
        self.append_sent: dict[int, tuple[int, bytes]] = {}
        self.commit_latencies: list[int] = []
        self.appends_failed = 0
        self.unavailable_ms = 0
        self.next_append_id = 0
        self.last_commit_ms = -1
        self.notes: list[str] = []
        self.disk_failing: dict[int, int] = {}  # node -> down time after its fsync fails
        self.fsync_errors = 0
        self._vote_request: VoteRequestData | None = None
        self.last_role: dict[int, object] = {}

    # --- queue -------------------------------------------------------------------------------
    def push(self, t: int, kind: int, nid: int, data: Any) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (t, self.seq, kind, nid, data))

    def record(self, text: str) -> None:
        self.hash.update(text.encode())
        if self.trace is not None:
            self.trace.append(text)

    # --- nodes -------------------------------------------------------------------------------
    def boot(self, nid: int) -> None:
        disk = self.disks[nid]
        self.incarnation[nid] += 1
        inc = self.incarnation[nid]
        node = RaftNode(
            nid,
            cluster_id=CLUSTER_ID,
            voters=self.voter_set,
            config=self.params.config,
            rng=random.Random(self.rng.getrandbits(64)),
            log=RaftLog(list(disk.entries), flushed_offset=disk.flushed, snapshot=disk.snapshot),
            election=disk.election,
            now_ms=self.now,
            first_correlation_id=inc << 32,
            kraft_version=self.params.kraft_version,
            local_directory_id=self.directory_ids[nid],
            local_endpoints=(membership.endpoint_of(nid),) if self.kraft1 else (),
            bootstrap_servers=membership.bootstrap_servers(self),
        )
        self.nodes[nid] = node
        self.checker.on_restart(nid)
        self.record(f"{self.now} boot {nid} {inc}\n")
        self.apply(nid, node, node.start(self.now))

    def crash(self, nid: int) -> None:
        if self.nodes[nid] is None:
            return
        self.nodes[nid] = None
        self.incarnation[nid] += 1
        self.disks[nid].crash(self.rng, self.params.mix.torn_write)
        self.record(f"{self.now} crash {nid}\n")

    def fsync_failed(self, nid: int, down_ms: int) -> None:
        """The runtime's fail-stop (issue 12): an fsync error stops the replica before any
        `Flushed`; what was not flushed may be gone (as in a crash). It restarts on its data
        after `down_ms` (the disk repaired or the pod rescheduled)."""
        self.fsync_errors += 1
        self.record(f"{self.now} fsync-error {nid}\n")
        self.crash(nid)
        if self.now < self.params.fault_end_ms:
            self.push(self.now + down_ms, FAULT, 0, ("restart", nid))

    def step(self, nid: int, event: Event) -> None:
        node = self.nodes[nid]
        if node is None:
            return
        try:
            result = node.handle(event, self.now)
        except Exception as exc:  # a core bug: record it as a violation, stop the node
            self.checker.fail("core-exception", f"node {nid}: {type(exc).__name__}: {exc}")
            self.nodes[nid] = None
            return
        self.apply(nid, node, result)

    def apply(self, nid: int, node: RaftNode, step: Step) -> None:
        disk = self.disks[nid]
        now = self.now
        checker = self.checker
        for eff in step.effects:
            if isinstance(eff, SendRequest):
                msg = eff.message
                if isinstance(msg, FetchRequestData):
                    checker.on_fetch_sent(nid, msg.topics[0].partitions[0].fetch_offset, disk)
                dest = membership.route(self, nid, eff)
                times = self.net.deliveries(nid, dest, now)
                for t in times:
                    self.push(t, REQUEST, dest, (nid, eff.correlation_id, msg))
                if not times and self.net.lossy_drop:
                    # A lost message on a live connection: the sender sees the disconnect.
                    t = now + self.params.link.delay_max_ms
                    self.push(
                        t, FAILED, nid, (self.incarnation[nid], eff.destination, eff.correlation_id)
                    )
            elif isinstance(eff, SendResponse):
                msg = eff.message
                if isinstance(msg, VoteResponseData):
                    self._check_vote(nid, msg, disk)
                dst = eff.destination
                if dst == membership.ADMIN:
                    membership.admin_answer(self, eff.correlation_id, msg)
                    continue
                times = self.net.deliveries(nid, dst, now)
                src = self.pseudo.get((dst, eff.correlation_id), nid)
                for t in times:
                    self.push(t, RESPONSE, dst, (src, eff.correlation_id, msg, eff.entries))
                if not times and self.net.lossy_drop:
                    t = now + self.params.link.delay_max_ms
                    self.push(t, FAILED, dst, (None, src, eff.correlation_id))
            elif isinstance(eff, AppendEntries):
                disk.append(eff.entries)
                checker.on_append(nid, disk, eff.entries)
                if self.kraft1:
                    membership.on_append(self, nid, node, eff.entries)
            elif isinstance(eff, FlushLog):
                latency = self.rng.randint(0, self.params.flush_max_ms)
                self.push(now + latency, FLUSH, nid, (self.incarnation[nid], eff.offset))
            elif isinstance(eff, TruncateLog):
                disk.truncate(eff.offset)
            elif isinstance(eff, PersistElectionState):
                disk.election = eff.election
            elif isinstance(eff, HighWatermarkAdvanced):
                checker.on_high_watermark(nid, node, eff.high_watermark, self.disks)
                every = self.params.snapshot_every
                snap = node.log.snapshot
                done = 0 if snap is None else snap.snapshot_id.offset
                if every and eff.high_watermark - done >= every:
                    self.push(now, SNAPSHOT, nid, (self.incarnation[nid], eff.high_watermark))
            elif isinstance(eff, WriteSnapshot | InstallSnapshot):
                snap = eff.snapshot
                end = snap.snapshot_id.offset
                checker.on_snapshot(nid, end, snap.payload, self.snapshot_payload(end))
                if isinstance(eff, WriteSnapshot):
                    disk.write_snapshot(snap)
                else:
                    disk.install_snapshot(snap)
                self.record(f"{now} snapshot {nid} {end} {type(eff).__name__}\n")
            elif isinstance(eff, LeaderChanged):
                if eff.leader_id == nid:
                    self.elections += 1
                    if self.first_leader_ms is None:
                        self.first_leader_ms = now
                self.record(f"{now} leader {nid} {eff.leader_id} {eff.epoch}\n")
            elif isinstance(eff, AppendCommitted):
                sent = self.append_sent.pop(eff.append_id, None)
                if sent is not None:
                    self.commit_latencies.append(now - sent[0])
                    checker.on_append_committed(nid, eff.last_offset, sent[1])
                    self.last_commit_ms = now
            elif isinstance(eff, AppendFailed):
                self.append_sent.pop(eff.append_id, None)
                self.appends_failed += 1
            elif isinstance(eff, VotersChanged):
                self.record(f"{now} voters {nid} {eff.voters.sorted_ids()}\n")
        checker.after_step(nid, node)
        if self.kraft1:
            membership.after_step(self, nid, node)
        buggify.observe(self, nid, node, step)
        if self.nodes[nid] is not node:
            return  # crashed at a worst moment: no poll for the dead incarnation
        st = node.state
        key = (st.role, st.epoch)
        if self.last_role.get(nid) != key:
            self.last_role[nid] = key
            self.record(f"{now} state {nid} {st.role.value} {st.epoch}\n")
        deadline = max(step.next_deadline_ms, now + 1)  # a poll-again-now runs 1 ms later
        if deadline != self.poll_at[nid] and deadline <= self.params.end_ms:
            self.poll_at[nid] = deadline
            self.poll_token[nid] += 1
            self.push(deadline, POLL, nid, (self.incarnation[nid], self.poll_token[nid]))

    def snapshot_payload(self, end: int) -> bytes | None:
        return committed_snapshot(self.checker.committed, end)

    def _check_vote(self, nid: int, msg: VoteResponseData, disk: MemoryDisk) -> None:
        req = self._vote_request
        if req is None or not msg.topics or not msg.topics[0].partitions:
            return
        p = msg.topics[0].partitions[0]
        rp = req.topics[0].partitions[0] if req.topics and req.topics[0].partitions else None
        if p.vote_granted and rp is not None and not rp.pre_vote:
            self.checker.on_vote_granted(nid, rp.replica_epoch, rp.replica_id, disk)

    # --- main loop ---------------------------------------------------------------------------
    def run(self) -> None:
        from metaquorum.sim.faults import schedule_faults

        p = self.params
        for nid in self.all_ids:
            self.boot(nid)
        schedule_faults(self)
        if p.membership_interval_ms > 0:
            self.push(p.membership_interval_ms, MEMBERSHIP, 0, None)
        if p.append_interval_ms > 0:
            self.push(self.rng.randint(0, p.append_interval_ms), APPEND, 0, None)
        self.push(p.end_ms, CHECK, 0, None)
        queue = self.queue
        checker = self.checker
        while queue:
            t, _, kind, nid, data = heapq.heappop(queue)
            self.now = t
            checker.now_ms = t
            if kind == CHECK:
                from metaquorum.sim.faults import final_checks

                final_checks(self)
                break
            if kind in (POLL, REQUEST, RESPONSE, FLUSH, FAILED, SNAPSHOT) and (
                self.paused_until[nid] > t
            ):
                self.seq += 1
                heapq.heappush(queue, (self.paused_until[nid], self.seq, kind, nid, data))
                continue
            self.events += 1
            checker.event_index = self.events
            if kind == POLL:
                inc, token = data
                if inc != self.incarnation[nid] or token != self.poll_token[nid]:
                    continue
                self.poll_at[nid] = -1
                self.step(nid, Poll())
            elif kind == REQUEST:
                src, cid, msg = data
                if src == membership.ADMIN:
                    if self.nodes[nid] is not None:
                        self.admin_pending[cid] = (nid, self.incarnation[nid])
                elif self.nodes[nid] is not None and isinstance(msg, ApiVersionsRequestData):
                    # Answered by the replica's runtime, not its core (as a node does).
                    for t2 in self.net.deliveries(nid, src, t):
                        answer = membership.api_versions_answer()
                        self.push(t2, RESPONSE, src, (nid, cid, answer, ()))
                    continue
                if self.nodes[nid] is None:
                    if src == membership.ADMIN:
                        continue
                    # Connection refused: the requester learns it after one more hop.
                    t2 = t + self.params.link.delay_min_ms
                    self.push(t2, FAILED, src, (None, self.pseudo.get((src, cid), nid), cid))
                    continue
                self._vote_request = msg if isinstance(msg, VoteRequestData) else None
                self.record(f"{t} rq {src}>{nid} {cid & 0xFFFFFFFF} {type(msg).__name__}\n")
                self.step(nid, RequestReceived(src, cid, msg))
                self._vote_request = None
            elif kind == RESPONSE:
                src, cid, msg, entries = data
                if self.nodes[nid] is None:
                    continue
                self.record(f"{t} rs {src}>{nid} {cid & 0xFFFFFFFF} {len(entries)}\n")
                self.step(nid, ResponseReceived(src, cid, msg, entries))
            elif kind == FLUSH:
                inc, offset = data
                if inc != self.incarnation[nid] or self.nodes[nid] is None:
                    continue
                if nid in self.disk_failing:
                    self.fsync_failed(nid, self.disk_failing.pop(nid))
                    continue
                flushed = self.disks[nid].flush(offset)
                self.step(nid, Flushed(flushed))
            elif kind == FAILED:
                inc, peer, cid = data
                if self.nodes[nid] is None or inc not in (None, self.incarnation[nid]):
                    continue
                self.record(f"{t} failed {nid} {peer} {cid & 0xFFFFFFFF}\n")
                self.step(nid, RequestFailed(peer, cid))
            elif kind == SNAPSHOT:
                inc, end = data
                if inc != self.incarnation[nid] or self.nodes[nid] is None:
                    continue
                payload = self.snapshot_payload(end)
                if payload is not None:
                    self.step(nid, CreateSnapshot(end, payload))
            elif kind == APPEND:
                self.client_append()
            elif kind == MEMBERSHIP:
                membership.membership_action(self)
            elif kind == FAULT:
                from metaquorum.sim.faults import apply_fault

                apply_fault(self, data)

    # --- workload ----------------------------------------------------------------------------
    def current_leader(self) -> int | None:
        best: tuple[int, int] | None = None
        for nid, node in self.nodes.items():
            if node is not None and isinstance(node.state, LeaderState):
                if self.paused_until[nid] > self.now:
                    continue
                if best is None or node.state.epoch > best[0]:
                    best = (node.state.epoch, nid)
        return None if best is None else best[1]

    def client_append(self) -> None:
        p = self.params
        interval = p.append_interval_ms
        if self.now < p.fault_end_ms + p.workload_tail_ms:
            self.push(
                self.now + self.rng.randint(interval // 2, interval * 3 // 2), APPEND, 0, None
            )
        leader = self.current_leader()
        if leader is None:
            self.unavailable_ms += interval
            return
        self.next_append_id += 1
        aid = self.next_append_id
        value = b"v%d" % aid
        self.append_sent[aid] = (self.now, value)
        self.record(f"{self.now} append {leader} {aid}\n")
        self.step(leader, ClientAppend(aid, (value,)))

"""The discrete-event simulation of one KRaft cluster: one queue, one virtual clock.

Role: own N replicas' cores (`RaftNode`), their in-memory disks, the network and the fault
schedule; deliver events in time order (`run`: one small handler per kind of queued event),
perform each step's effects (`apply`: one small handler per effect type of the core's `Effect`
union, an unknown type raises `UnknownEffect`), and run the invariant checker after every
event. The membership operator (sim/membership.py), the client workload (sim/workload.py) and
the worst-moment crashes (sim/buggify.py) see this class only as a `World` (sim/surface.py),
the fault injector (sim/faults.py) as a `FaultTarget`.
Deterministic: every random choice comes from RNGs derived from the seed, and ties in the
queue break by insertion order.
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
from collections.abc import Callable
from typing import Any

from metaquorum.core import effects as fx
from metaquorum.core import events as ev
from metaquorum.core.log import RaftLog
from metaquorum.core.node import RaftNode
from metaquorum.core.rng import randint
from metaquorum.core.states import LeaderState
from metaquorum.protocol import messages as msgs
from metaquorum.sim import buggify, state_machine
from metaquorum.sim.disk import MemoryDisk
from metaquorum.sim.faults import apply_fault, final_checks, fsync_failed, schedule_faults
from metaquorum.sim.invariants import InvariantChecker
from metaquorum.sim.membership import ADMIN, Membership, api_versions_answer
from metaquorum.sim.network import Network
from metaquorum.sim.params import SimParams
from metaquorum.sim.reach import Reach
from metaquorum.sim.resign_watch import ResignWatch
from metaquorum.sim.snapshots import committed_snapshot
from metaquorum.sim.surface import PAUSABLE, Kind, UnknownEffect
from metaquorum.sim.workload import ClientWorkload

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


class Simulation:
    def __init__(self, params: SimParams):
        self.params = params
        self.rng = random.Random(params.seed)
        self.net = Network(random.Random(self.rng.getrandbits(64)), params.link)
        self.voter_ids = list(range(1, params.voters + 1))
        self.all_ids = list(range(1, params.voters + params.observers + 1))
        self.cluster_id = CLUSTER_ID
        # KIP-853 (sim/membership.py): directory ids (drawn here), bootstrap voters, admin
        # requests; a `kraft_upgrade` run starts from a kraft.version 0 static quorum.
        self.kraft1 = params.kraft_version >= 1 or params.kraft_upgrade
        self.membership = Membership(self, self.voter_ids, self.kraft1, params.kraft_upgrade)
        self.workload: ClientWorkload = ClientWorkload(self)
        self.reach = Reach()  # sim/reach.py: protocol paths and worst moments reached
        self.situations = self.reach.moments  # sim/buggify.py counts its moments there
        self.resign_watch = ResignWatch(self)  # invariant leader-resigns-in-time
        self.disks = {n: MemoryDisk() for n in self.all_ids}
        self.nodes: dict[int, RaftNode | None] = {n: None for n in self.all_ids}
        self.incarnation = dict.fromkeys(self.all_ids, 0)
        self.paused_until = dict.fromkeys(self.all_ids, 0)
        self.poll_token = dict.fromkeys(self.all_ids, 0)
        self.poll_at = dict.fromkeys(self.all_ids, -1)
        self.checker = InvariantChecker(frozenset(self.voter_ids))
        self.checker.dynamic = self.kraft1
        if self.kraft1:
            self.checker.lost_since_ack = self.membership.lost_since_ack
        self.queue: list[tuple[int, int, int, int, Any]] = []
        self.seq = 0
        self.now = 0
        self.events = 0
        self.hash = hashlib.sha256()
        self.trace: list[str] | None = [] if params.trace else None
        self.elections = 0
        self.first_leader_ms: int | None = None
        self.kraft_upgrades: list[tuple[int, int, str | None]] = []  # (node, version, error)
        self.notes: list[str] = []
        self.disk_failing: dict[int, int] = {}  # node -> down time after its fsync fails
        self.fsync_errors = 0
        self._vote_request: msgs.VoteRequestData | None = None
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
        members = self.membership
        node = RaftNode(
            nid,
            cluster_id=CLUSTER_ID,
            voters=members.voter_set,
            config=self.params.config,
            rng=random.Random(self.rng.getrandbits(64)),
            log=RaftLog(list(disk.entries), flushed_offset=disk.flushed, snapshot=disk.snapshot),
            election=disk.election,
            now_ms=self.now,
            first_correlation_id=inc << 32,
            kraft_version=self.params.kraft_version,
            local_directory_id=members.directory_ids[nid],
            local_endpoints=members.local_endpoints(nid),
            bootstrap_servers=members.bootstrap_servers(),
        )
        self.nodes[nid] = node
        self.checker.on_restart(nid)
        self.reach.on_boot(nid, disk.election)
        self.record(f"{self.now} boot {nid} {inc}\n")
        self.apply(nid, node, node.start(self.now))

    def crash(self, nid: int) -> None:
        if self.nodes[nid] is None:
            return
        self.nodes[nid] = None
        self.incarnation[nid] += 1
        self.disks[nid].crash(self.rng, self.params.mix.torn_write)
        self.record(f"{self.now} crash {nid}\n")

    def step(self, nid: int, event: ev.Event) -> None:
        node = self.nodes[nid]
        if node is None:
            return
        before = node.state
        try:
            result = node.handle(event, self.now)
        except Exception as exc:  # a core bug: record it as a violation, stop the node
            self.checker.fail("core-exception", f"node {nid}: {type(exc).__name__}: {exc}")
            self.nodes[nid] = None
            return
        self.reach.observe(nid, node, event, before, result)
        self.apply(nid, node, result)

    def current_leader(self) -> int | None:
        """The running, unpaused leader of the highest epoch (the lowest id among equals)."""
        leaders = [
            (n.state.epoch, nid)
            for nid, n in self.nodes.items()
            if n is not None
            and isinstance(n.state, LeaderState)
            and self.paused_until[nid] <= self.now
        ]
        return max(leaders, key=lambda x: x[0])[1] if leaders else None

    # --- effects -----------------------------------------------------------------------------
    def apply(self, nid: int, node: RaftNode, step: fx.Step) -> None:
        """Perform `step`'s effects in order, then the per-step checks and the next poll."""
        handlers = EFFECT_HANDLERS
        for eff in step.effects:
            handler = handlers.get(type(eff))
            if handler is None:
                raise UnknownEffect(f"node {nid}: the simulator has no handler for {eff!r}")
            handler(self, nid, node, eff)
        self._after_step(nid, node, step)

    def _send_request(self, nid: int, node: RaftNode, eff: fx.SendRequest) -> None:
        msg = eff.message
        if isinstance(msg, msgs.FetchRequestData):
            fetch_offset = msg.topics[0].partitions[0].fetch_offset
            self.checker.on_fetch_sent(nid, fetch_offset, self.disks[nid])
        dest = self.membership.route(nid, eff)
        cid = eff.correlation_id
        times = self.net.deliveries(nid, dest, self.now)
        for t in times:
            self.push(t, Kind.REQUEST, dest, (nid, cid, msg))
        if not times and self.net.lossy_drop:
            # A lost message on a live connection: the sender sees the disconnect.
            t = self.now + self.params.link.delay_max_ms
            self.push(t, Kind.FAILED, nid, (self.incarnation[nid], eff.destination, cid))

    def _send_response(self, nid: int, node: RaftNode, eff: fx.SendResponse) -> None:
        msg = eff.message
        if isinstance(msg, msgs.VoteResponseData):
            self.checker.on_vote_response(nid, self._vote_request, msg, self.disks[nid])
        dst = eff.destination
        if dst == ADMIN:
            self.membership.admin_answer(eff.correlation_id, msg)
            return
        now = self.now
        times = self.net.deliveries(nid, dst, now)
        src = self.membership.answer_source(dst, eff.correlation_id, nid)
        for t in times:
            self.push(t, Kind.RESPONSE, dst, (src, eff.correlation_id, msg, eff.entries))
        if not times and self.net.lossy_drop:
            t = now + self.params.link.delay_max_ms
            self.push(t, Kind.FAILED, dst, (None, src, eff.correlation_id))

    def _append_entries(self, nid: int, node: RaftNode, eff: fx.AppendEntries) -> None:
        disk = self.disks[nid]
        disk.append(eff.entries)
        self.checker.on_append(nid, disk, eff.entries)
        if self.kraft1:
            self.membership.on_append(nid, node, eff.entries)

    def _flush_log(self, nid: int, node: RaftNode, eff: fx.FlushLog) -> None:
        latency = randint(self.rng, 0, self.params.flush_max_ms)
        self.push(self.now + latency, Kind.FLUSH, nid, (self.incarnation[nid], eff.offset))

    def _truncate_log(self, nid: int, node: RaftNode, eff: fx.TruncateLog) -> None:
        self.disks[nid].truncate(eff.offset)

    def _persist_election(self, nid: int, node: RaftNode, eff: fx.PersistElectionState) -> None:
        self.disks[nid].election = eff.election  # synchronous: durable before what follows

    def _high_watermark(self, nid: int, node: RaftNode, eff: fx.HighWatermarkAdvanced) -> None:
        self.checker.on_high_watermark(nid, node, eff.high_watermark, self.disks)
        state_machine.on_high_watermark(self, nid, node, eff.high_watermark)

    def _snapshot(
        self, nid: int, node: RaftNode, eff: fx.WriteSnapshot | fx.InstallSnapshot
    ) -> None:
        snap = eff.snapshot
        end = snap.snapshot_id.offset
        expected = committed_snapshot(self.checker.committed, end, cache=self.checker.snapshot_data)
        self.checker.on_snapshot(nid, end, snap.payload, expected)
        if isinstance(eff, fx.WriteSnapshot):
            self.disks[nid].write_snapshot(snap)
        else:
            self.disks[nid].install_snapshot(snap)
        self.record(f"{self.now} snapshot {nid} {end} {type(eff).__name__}\n")

    def _leader_changed(self, nid: int, node: RaftNode, eff: fx.LeaderChanged) -> None:
        if eff.leader_id == nid:
            self.elections += 1
            if self.first_leader_ms is None:
                self.first_leader_ms = self.now
        self.record(f"{self.now} leader {nid} {eff.leader_id} {eff.epoch}\n")

    def _voters_changed(self, nid: int, node: RaftNode, eff: fx.VotersChanged) -> None:
        # The runtime re-points its peer connections; here every replica is reachable by id.
        self.record(f"{self.now} voters {nid} {eff.voters.sorted_ids()}\n")

    def _kraft_upgrade(self, nid: int, node: RaftNode, eff: fx.KRaftVersionUpgrade) -> None:
        # The runtime answers the UpdateFeatures call that waits for it; no mix upgrades yet.
        self.kraft_upgrades.append((nid, eff.version, eff.error))
        self.record(f"{self.now} kraft-upgrade {nid} {eff.version} {eff.error}\n")

    def _after_step(self, nid: int, node: RaftNode, step: fx.Step) -> None:
        self.checker.after_step(nid, node)
        if self.kraft1:
            self.membership.after_step(nid, node)
        buggify.observe(self, nid, node, step)
        if self.nodes[nid] is not node:
            return  # crashed at a worst moment: no poll for the dead incarnation
        st = node.state
        if isinstance(st, LeaderState):
            self.resign_watch.check(nid, node, every_ms=10)
        key = (st.role, st.epoch)
        if self.last_role.get(nid) != key:
            self.last_role[nid] = key
            self.record(f"{self.now} state {nid} {st.role.value} {st.epoch}\n")
        deadline = max(step.next_deadline_ms, self.now + 1)  # a poll-again-now runs 1 ms later
        if deadline != self.poll_at[nid] and deadline <= self.params.end_ms:
            self.poll_at[nid] = deadline
            self.poll_token[nid] += 1
            self.push(deadline, Kind.POLL, nid, (self.incarnation[nid], self.poll_token[nid]))

    # --- main loop ---------------------------------------------------------------------------
    def run(self) -> None:
        self._start()
        deliver = self._deliveries()
        queue = self.queue
        checker = self.checker
        paused = self.paused_until
        while queue:
            t, _, kind, nid, data = heapq.heappop(queue)
            self.now = t
            checker.now_ms = t
            if kind == Kind.CHECK:
                self.resign_watch.check_all()
                final_checks(self)
                break
            if kind in PAUSABLE and paused[nid] > t:  # a paused replica handles it later
                self.seq += 1
                heapq.heappush(queue, (paused[nid], self.seq, kind, nid, data))
                continue
            self.events += 1
            checker.event_index = self.events
            deliver[kind](nid, data)

    def _start(self) -> None:
        """Boot every replica, then queue the faults, the operator, the client and the end."""
        p = self.params
        for nid in self.all_ids:
            self.boot(nid)
        schedule_faults(self)
        if p.membership_interval_ms > 0:
            self.push(p.membership_interval_ms, Kind.MEMBERSHIP, 0, None)
        self.workload.start()
        self.push(p.end_ms, Kind.CHECK, 0, None)

    def _deliveries(self) -> list[Callable[[int, Any], None]]:
        """The handler of each kind of queued event, indexed by kind (sim/surface.py)."""
        by_kind: dict[int, Callable[[int, Any], None]] = {
            Kind.POLL: self._poll,
            Kind.REQUEST: self._request,
            Kind.RESPONSE: self._response,
            Kind.FLUSH: self._flushed,
            Kind.FAULT: self._fault,
            Kind.APPEND: lambda nid, data: self.workload.client_append(),
            Kind.CHECK: self._unexpected,
            Kind.FAILED: self._failed,
            Kind.SNAPSHOT: lambda nid, data: state_machine.create(self, nid, data),
            Kind.MEMBERSHIP: lambda nid, data: self.membership.operator_action(),
        }
        return [by_kind[k] for k in range(len(by_kind))]

    def _fault(self, nid: int, data: tuple[object, ...]) -> None:
        apply_fault(self, data)
        self.resign_watch.check_all()  # a cut or a crash may leave a leader alone

    def _unexpected(self, nid: int, data: Any) -> None:
        raise AssertionError("CHECK is handled by the loop itself")

    def _poll(self, nid: int, data: tuple[int, int]) -> None:
        inc, token = data
        if inc != self.incarnation[nid] or token != self.poll_token[nid]:
            return
        self.poll_at[nid] = -1
        self.step(nid, ev.Poll())

    def _request(self, nid: int, data: tuple[int, int, object]) -> None:
        src, cid, msg = data
        running = self.nodes[nid] is not None
        if src == ADMIN:
            if running:
                self.membership.admin_received(nid, cid)
        elif running and isinstance(msg, msgs.ApiVersionsRequestData):
            # Answered by the replica's runtime, not its core (as a node does).
            for t in self.net.deliveries(nid, src, self.now):
                self.push(t, Kind.RESPONSE, src, (nid, cid, api_versions_answer(), ()))
            return
        if not running:
            if src == ADMIN:
                return
            # Connection refused: the requester learns it after one more hop.
            t = self.now + self.params.link.delay_min_ms
            source = self.membership.answer_source(src, cid, nid)
            self.push(t, Kind.FAILED, src, (None, source, cid))
            return
        self._vote_request = msg if isinstance(msg, msgs.VoteRequestData) else None
        self.record(f"{self.now} rq {src}>{nid} {cid & 0xFFFFFFFF} {type(msg).__name__}\n")
        self.step(nid, ev.RequestReceived(src, cid, msg))
        self._vote_request = None

    def _response(self, nid: int, data: tuple[int, int, object, tuple[Any, ...]]) -> None:
        src, cid, msg, entries = data
        if self.nodes[nid] is None:
            return
        self.record(f"{self.now} rs {src}>{nid} {cid & 0xFFFFFFFF} {len(entries)}\n")
        self.step(nid, ev.ResponseReceived(src, cid, msg, entries))

    def _flushed(self, nid: int, data: tuple[int, int]) -> None:
        inc, offset = data
        if inc != self.incarnation[nid] or self.nodes[nid] is None:
            return
        if nid in self.disk_failing:
            fsync_failed(self, nid, self.disk_failing.pop(nid))
            return
        self.step(nid, ev.Flushed(self.disks[nid].flush(offset)))

    def _failed(self, nid: int, data: tuple[int | None, int, int]) -> None:
        inc, peer, cid = data
        if self.nodes[nid] is None or inc not in (None, self.incarnation[nid]):
            return
        self.record(f"{self.now} failed {nid} {peer} {cid & 0xFFFFFFFF}\n")
        self.step(nid, ev.RequestFailed(peer, cid))


# One handler per effect type of the core's `Effect` union (core/effects.py); `apply` raises
# `UnknownEffect` on any other (tests/unit/test_effects_handled.py checks both drivers).
EFFECT_HANDLERS: dict[type, Callable[[Simulation, int, RaftNode, Any], None]] = {
    fx.SendRequest: Simulation._send_request,
    # The simulated network has no connections to close (its links reorder and duplicate
    # anyway); the runtime closes the one an abandoned request is in flight on.
    fx.AbandonRequest: lambda sim, nid, node, eff: None,
    fx.SendResponse: Simulation._send_response,
    fx.PersistElectionState: Simulation._persist_election,
    fx.AppendEntries: Simulation._append_entries,
    fx.TruncateLog: Simulation._truncate_log,
    fx.FlushLog: Simulation._flush_log,
    fx.WriteSnapshot: Simulation._snapshot,
    fx.InstallSnapshot: Simulation._snapshot,
    fx.HighWatermarkAdvanced: Simulation._high_watermark,
    fx.LeaderChanged: Simulation._leader_changed,
    fx.VotersChanged: Simulation._voters_changed,
    fx.KRaftVersionUpgrade: Simulation._kraft_upgrade,
    fx.AppendCommitted: lambda sim, nid, node, eff: sim.workload.committed(nid, eff),
    fx.AppendFailed: lambda sim, nid, node, eff: sim.workload.failed(eff),
}

"""The driver: one asyncio task feeding events to the sans-IO core and performing its effects
(DESIGN.md §4-§5; the real-IO twin of `metaquorum.sim.cluster`).

Role: own the `RaftNode`; take events from one queue (requests, responses, flushes, client
appends, resign), call `handle(event, now_ms)`, perform the step's effects in order, and sleep
until the step's `next_deadline_ms` or the next event. One injected `Clock` (runtime/clock.py)
gives every event time, deadline and timestamp the core sees. Its parts, each in its own
module: the byte caches (`BatchBytes`), the snapshot policy (`SnapshotPolicy`), the graceful
shutdown (runtime/shutdown.py), the peer connections (`PeerPool`, following `VotersChanged`).

Invariants (durability barriers):
- `PersistElectionState` is awaited (written and fsynced) before any later effect of the step;
- appends, truncations and flushes go to the one storage thread in effect order; `Flushed` comes
  back only with the offset storage made durable, so nothing the core sends acknowledges an
  unflushed offset;
- fail-stop: the first failed storage operation (write, fsync, truncate, snapshot, quorum-state)
  stops the driver with one logged line and fails pending appends; `serve` then exits the
  process with `EXIT_STORAGE_FAILURE` without the graceful hand-over (issue 12);
- a follower stores the leader's batches byte for byte (the bytes received for those entries);
- a response to an inbound request completes the future of exactly that request;
- `WriteSnapshot` / `InstallSnapshot` are written (fsync, rename) before any later effect, then
  the storage log start moves (old segments deleted) or, after a download, the log restarts at
  the snapshot; the key-value state machine is fed by the core's `ListenerDispatcher`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from asyncio import Future
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, assert_never

from metaquorum.core.effects import (
    AbandonRequest,
    AppendCommitted,
    AppendEntries,
    AppendFailed,
    FlushLog,
    HighWatermarkAdvanced,
    InstallSnapshot,
    KRaftVersionUpgrade,
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
    Event,
    Flushed,
    Poll,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
)
from metaquorum.core.listener import ListenerDispatcher
from metaquorum.core.log import LogEntry, RaftLog, Snapshot
from metaquorum.core.node import RaftNode
from metaquorum.core.states import LeaderState, state_summary
from metaquorum.net.endpoint import Endpoint
from metaquorum.runtime.appends import AppendCallback, PendingAppends
from metaquorum.runtime.batch_bytes import BatchBytes
from metaquorum.runtime.client_errors import NotLeaderError
from metaquorum.runtime.clock import SYSTEM_CLOCK, Clock
from metaquorum.runtime.config import NodeConfig
from metaquorum.runtime.features import KRaftUpgrades
from metaquorum.runtime.membership import (
    StartupMembership,
    bootstrap_endpoints,
    local_endpoints,
    startup_membership,
    voter_endpoints,
)
from metaquorum.runtime.peers import PeerPool
from metaquorum.runtime.raft_metrics import RaftMetrics
from metaquorum.runtime.records_bridge import (
    entries_from_records,
)
from metaquorum.runtime.shutdown import graceful_shutdown
from metaquorum.runtime.snapshot_policy import SnapshotPolicy
from metaquorum.runtime.state_machine import KeyValueStateMachine
from metaquorum.runtime.storage_io import (
    StorageIO,
    election_from_file,
    election_to_file,
    write_snapshot,
)
from metaquorum.storage.replica import ReplicaStorage

log = logging.getLogger("metaquorum.driver")


@dataclass
class DriverStats:
    appends: int = 0
    committed: int = 0
    elections_won: int = 0
    leader_changes: int = 0
    last_leader_change_ms: int = 0
    commit_latency_sum_ms: float = 0.0
    commit_latency_count: int = 0
    commit_latency_max_ms: float = 0.0

    def record_commit_latency(self, ms: float) -> None:
        self.commit_latency_sum_ms += ms
        self.commit_latency_count += 1
        self.commit_latency_max_ms = max(self.commit_latency_max_ms, ms)


class Driver:
    def __init__(
        self,
        config: NodeConfig,
        storage: ReplicaStorage,
        entries: list[LogEntry],
        snapshot: Snapshot | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        membership: StartupMembership | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.cluster_id = storage.meta.cluster_id or ""
        self.io = StorageIO(storage, lambda off: self.post(Flushed(off)), self._on_storage_failure)
        if membership is None:
            membership = startup_membership(config, storage, snapshot)
        voters = membership.voters
        start = self.clock.now_ms()
        self.node = RaftNode(
            config.node_id,
            cluster_id=self.cluster_id,
            voters=voters,
            config=config.quorum,
            rng=random.Random(),
            log=RaftLog(entries, snapshot=snapshot),
            election=election_from_file(storage.read_election_state()),
            now_ms=start,
            kraft_version=membership.kraft_version,
            local_directory_id=(
                None if storage.meta.directory_id is None else str(storage.meta.directory_id)
            ),
            local_endpoints=local_endpoints(config),
            bootstrap_servers=bootstrap_endpoints(config),
            topic=config.raft_topic,
        )
        # The voters' endpoints on the controller listener: the peer pool's targets and the
        # node lists of DescribeCluster and Produce (follows `VotersChanged`). From the core's
        # set, which has replayed the log's VotersRecords over the start-up set (a node that
        # joined after `--no-initial-controllers` restarts with an empty start-up set).
        self.voter_endpoints: dict[int, Endpoint] = voter_endpoints(
            self.node.voters, config.listener_name
        )
        self.peers = PeerPool(
            config, self.voter_endpoints, self._on_response, self._on_request_failed
        )
        # The driver's inbox: a deque and one waiter future (no `asyncio.Queue`: its `get` and an
        # `asyncio.timeout` per event were ~6% of a node's time at one client, issue 28).
        self.events: deque[Event] = deque()
        self._waiter: Future[None] | None = None
        self.state_machine = KeyValueStateMachine()
        self.snapshots = SnapshotPolicy(
            self.state_machine, self.post, self.clock, config.snapshot_bytes, self.node.control
        )
        self.listener = ListenerDispatcher(self.state_machine, config.node_id)
        if snapshot is not None:
            self.state_machine.handle_load_snapshot(snapshot)
            self.listener.next_offset = snapshot.snapshot_id.offset
        self.snapshots_written = 0
        self._inbound: dict[int, Callable[[Any, tuple[LogEntry, ...]], None]] = {}
        self._next_inbound = 1 << 40
        self.appends = PendingAppends(self._record_commit_latency)
        self.bytes = BatchBytes()  # the leader's batches as received / as encoded
        self.stats = DriverStats()
        self.metrics = RaftMetrics(start)  # Kafka's windowed raft-metrics sensors
        self.hw_listeners: list[Callable[[int], None]] = []
        self.kraft_upgrades = KRaftUpgrades(self)  # UpdateFeatures' kraft.version upgrades
        self.shutdown_complete = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.failure: BaseException | None = None

    # --- inputs ------------------------------------------------------------------------------
    def post(self, event: Event) -> None:
        self.events.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _on_response(
        self, source: int, cid: int, message: Any, records: bytes | None, fetch_offset: int
    ) -> None:
        entries: tuple[LogEntry, ...] = ()
        if records:
            try:
                entries = entries_from_records(records, fetch_offset)
            except ValueError as e:
                log.warning("dropping a Fetch response from %s with bad records: %s", source, e)
                self.post(RequestFailed(source, cid))
                return
            if entries:
                self.bytes.keep_received(records, entries)
        self.post(ResponseReceived(source, cid, message, entries))

    def _on_request_failed(self, destination: int, cid: int) -> None:
        self.post(RequestFailed(destination, cid))

    def submit_request_with_callback(
        self,
        message: Any,
        callback: Callable[[Any, tuple[LogEntry, ...]], None],
        source: int,
    ) -> None:
        """Hand an inbound Raft request to the core; `callback(response, entries)` runs from
        the core's `SendResponse` (the hot path: no task or future per request). `source`:
        the inbound connection it came on (the read lease ties a Fetch to the response before
        it on the same connection)."""
        self._next_inbound += 1
        self._inbound[self._next_inbound] = callback
        self.post(RequestReceived(source, self._next_inbound, message))

    async def append(self, values: tuple[bytes, ...]) -> int:
        """Append as one unit on the leader; the last offset once committed."""
        return await self.append_nowait(values, None)

    def append_nowait(self, values: tuple[bytes, ...], timeout_s: float | None) -> Future[int]:
        """`append` as a future: the last offset, or NotLeaderError on lost leadership, or
        TimeoutError after `timeout_s` (the records may still commit later)."""
        fut: Future[int] = asyncio.get_running_loop().create_future()

        def settle(result: int | BaseException) -> None:
            if fut.done():
                return
            if isinstance(result, BaseException):
                fut.set_exception(result)
            else:
                fut.set_result(result)

        self.append_with_callback(values, timeout_s, settle)
        return fut

    def append_with_callback(
        self, values: tuple[bytes, ...], timeout_s: float | None, callback: AppendCallback
    ) -> None:
        """The Produce hot path: `callback` gets the last offset or the exception, once."""
        self.post(ClientAppend(self.appends.add(callback, timeout_s), values))

    def _record_commit_latency(self, ms: float) -> None:
        self.stats.record_commit_latency(ms)
        self.metrics.commit_latency.record(ms, self.clock.now_ms())

    # --- the loop ----------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _run(self) -> None:
        try:
            step = self.node.start(self.clock.now_ms())
            seen: tuple[type, int] | None = None
            while True:
                await self._perform(step)
                self.listener.on_step(step.effects, self.node.log, self.node.state)
                state = self.node.state
                if (type(state), state.epoch) != seen:
                    seen = (type(state), state.epoch)
                    self.metrics.on_state(state, self.clock.now_ms())
                    log.info("transition to %s", state_summary(state, self.node.local_id))
                if self.node.shutdown_complete:
                    self.shutdown_complete.set()
                self.snapshots.maybe_snapshot(self.node.log)
                if self._stopping and not self.events:
                    return
                event = await self._next_event(step.next_deadline_ms)
                step = self.node.handle(event, self.clock.now_ms())
                # Drain what is already queued before sleeping (cheap batching).
                while self.events and not step.effects:
                    step = self.node.handle(self.events.popleft(), self.clock.now_ms())
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            if self.io.failed is not None:  # reported once, by `_on_storage_failure`
                self._on_storage_failure(self.io.failed)
                raise
            self.failure = e
            log.exception("the Raft driver stopped")
            raise

    def _on_storage_failure(self, error: BaseException) -> None:
        """Fail-stop (Kafka's raft driver halts on any storage exception): log one line naming
        the operation, file and errno, stop the driver at its next await and fail every pending
        append (never acknowledged). Nothing is reported flushed after the failure (StorageIO)."""
        if self.failure is not None:
            return
        self.failure = error
        self._stopping = True
        log.critical("storage failure, stopping the node: %s", error)
        task = self._task
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
        self.appends.fail_all(NotLeaderError("storage failure", -1))

    async def _next_event(self, deadline_ms: int) -> Event:
        """The next queued event, or `Poll()` at the deadline. A queued event is taken without
        arming a timer; otherwise one waiter future and one timer handle (this runs once per
        event on the hot path: no task, no `asyncio.timeout` context)."""
        if self.events:
            return self.events.popleft()
        start = self.clock.now_ms()
        timeout = (deadline_ms - start) / 1000
        if timeout <= 0:
            await asyncio.sleep(0)  # a due deadline never starves the other tasks
            return self.events.popleft() if self.events else Poll()
        loop = asyncio.get_running_loop()
        waiter: Future[None] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(timeout, _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            if self._waiter is waiter:
                self._waiter = None
            # poll-idle-ratio-avg: the time spent waiting, recorded when the wait began
            self.metrics.on_idle(self.clock.now_ms() - start, start)
        return self.events.popleft() if self.events else Poll()

    async def _perform(self, step: Step) -> None:
        storage = self.io.storage
        for eff in step.effects:
            if isinstance(eff, SendRequest):
                target = eff.endpoint
                endpoint = None if target is None else Endpoint(target.host, target.port)
                self.peers.send(eff.destination, eff.correlation_id, eff.message, endpoint)
            elif isinstance(eff, AbandonRequest):
                self.peers.abandon(eff.destination, eff.correlation_id)
            elif isinstance(eff, SendResponse):
                answer = self._inbound.pop(eff.correlation_id, None)
                if answer is not None:
                    answer(eff.message, eff.entries)
            elif isinstance(eff, PersistElectionState):
                await self.io.call(
                    partial(storage.write_election_state, election_to_file(eff.election))
                )
            elif isinstance(eff, AppendEntries):
                self._append(eff.entries)
            elif isinstance(eff, TruncateLog):
                self.bytes.on_truncate()
                self.io.post(partial(storage.log.truncate_to, eff.offset))
            elif isinstance(eff, FlushLog):
                self.io.request_flush(eff.offset)
            elif isinstance(eff, WriteSnapshot | InstallSnapshot):
                install = isinstance(eff, InstallSnapshot)
                await self.io.call(partial(write_snapshot, storage, eff.snapshot, install))
                self.snapshots_written += 1
                self.bytes.on_snapshot(installed=install)
            elif isinstance(eff, HighWatermarkAdvanced):
                for listener in self.hw_listeners:
                    listener(eff.high_watermark)
            elif isinstance(eff, LeaderChanged):
                self.stats.leader_changes += 1
                self.stats.last_leader_change_ms = self.clock.now_ms()
                if eff.leader_id == self.config.node_id:
                    self.stats.elections_won += 1
                log.info("leader is %s in epoch %s", eff.leader_id, eff.epoch)
            elif isinstance(eff, VotersChanged):
                self.voter_endpoints = voter_endpoints(eff.voters, self.config.listener_name)
                self.peers.set_endpoints(self.voter_endpoints)
                log.info("voters are now %s", eff.voters.sorted_ids())
            elif isinstance(eff, KRaftVersionUpgrade):
                self.kraft_upgrades.on_outcome(eff, self.node.log.end_offset)
            elif isinstance(eff, AppendCommitted):
                self.stats.committed += 1
                self.appends.committed(eff.append_id, eff.last_offset)
            elif isinstance(eff, AppendFailed):
                self.appends.failed(eff.append_id, NotLeaderError(eff.reason, self.node.leader_id))
            else:  # a new core effect must be handled here (mypy flags it; fail-stop at run)
                assert_never(eff)

    async def snapshot_now(self, timeout_s: float = 10.0) -> tuple[int, int] | None:
        """`snapshot create`: snapshot the state machine now (runtime/snapshot_policy.py)."""
        return await self.snapshots.snapshot_now(self.node.log, timeout_s)

    def _append(self, entries: tuple[LogEntry, ...]) -> None:
        if not entries:
            return
        leader = isinstance(self.node.state, LeaderState)
        now = self.clock.now_ms()
        data = self.bytes.for_append(entries, leader=leader, now_ms=now)
        self.stats.appends += len(entries)
        self.metrics.on_appended(len(entries), leader, now)
        storage = self.io.storage

        def write() -> None:
            for chunk in data:
                storage.log.append_as_follower(chunk)

        self.io.post(write)

    def recent_records(self, first: int, end: int, max_bytes: int) -> bytes | None:
        return self.bytes.read_recent(first, end, max_bytes)

    # --- shutdown ----------------------------------------------------------------------------
    async def graceful_shutdown(self, timeout_s: float = 5.0) -> None:
        """SIGTERM, as Kafka's `KafkaRaftClient.shutdown(5000)` (runtime/shutdown.py)."""
        await graceful_shutdown(self, timeout_s)

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self.appends.fail_all(NotLeaderError("the node is stopping", -1))
        self.appends.close()
        self.kraft_upgrades.close()
        await self.peers.close()
        await self.io.close()


def _wake(waiter: Future[None]) -> None:
    """The driver's deadline: end its wait (an event may have ended it already)."""
    if not waiter.done():
        waiter.set_result(None)

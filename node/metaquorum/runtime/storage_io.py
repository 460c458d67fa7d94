"""The storage thread and flush worker of a running node (DESIGN.md §4-§5, docs/storage.md).

Role: every call into `ReplicaStorage` after start-up runs on ONE dedicated thread, in the
order the driver submits it, so the asyncio loop never blocks on a write or an fsync and the
storage sees the core's effects in order. Flushes are coalesced (group commit): while one
fsync runs, later `FlushLog` effects only raise the wanted offset; the next fsync covers every
append submitted before it started.

Invariants: `Flushed(offset)` is reported only with the offset `MetadataLog.flush()` returned
(everything below it is durable); an append and the flush that follows it run in submit order;
the election state write is awaited by the driver before any later effect (barrier).
Fail-stop (issue 12): the first operation that raises marks the storage failed; no later
operation runs (a failed fsync is never retried: after "fsyncgate" a second fsync returning 0
proves nothing) and no `Flushed` is reported after it; the failure reaches the driver once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from metaquorum.core.ids import OffsetAndEpoch, ReplicaKey
from metaquorum.core.log import LogEntry, Snapshot
from metaquorum.core.states import ElectionState
from metaquorum.protocol.types import Uuid
from metaquorum.runtime.records_bridge import entries_from_records
from metaquorum.storage.quorum_state import QuorumStateFile
from metaquorum.storage.replica import ReplicaStorage
from metaquorum.storage.snapshots import OffsetAndEpoch as StorageSnapshotId

T = TypeVar("T")
log = logging.getLogger("metaquorum.storage_io")
READ_CHUNK = 8 * 1024 * 1024


def election_from_file(state: QuorumStateFile | None) -> ElectionState | None:
    if state is None:
        return None
    voted = None
    if state.voted_id >= 0:
        d = state.voted_directory_id
        voted = ReplicaKey(state.voted_id, None if d == Uuid.ZERO else str(d))
    return ElectionState(state.leader_epoch, state.leader_id, voted)


def election_to_file(election: ElectionState) -> QuorumStateFile:
    voted = election.voted_key
    directory = Uuid.ZERO
    if voted is not None and voted.directory_id:
        directory = Uuid.from_string(voted.directory_id)
    return QuorumStateFile(
        leader_id=election.leader_id,
        leader_epoch=election.epoch,
        voted_id=-1 if voted is None else voted.id,
        voted_directory_id=directory,
    )


def load_entries(storage: ReplicaStorage) -> list[LogEntry]:
    """Every entry of the log, for the core's in-memory `RaftLog` (start-up only)."""
    log_ = storage.log
    out: list[LogEntry] = []
    offset = log_.log_start_offset
    while offset < log_.log_end_offset:
        chunk = log_.read(offset, READ_CHUNK).records
        entries = entries_from_records(chunk, offset)
        if not entries:
            break
        out.extend(entries)
        offset = entries[-1].offset + 1
    return out


def write_snapshot(storage: ReplicaStorage, snapshot: Snapshot, install: bool) -> None:
    """Persist a snapshot (KIP-630) as `<offset>-<epoch>.checkpoint`, then move the log start
    past it (own snapshot) or restart the log at it (a follower's download)."""
    sid = StorageSnapshotId(snapshot.snapshot_id.offset, snapshot.snapshot_id.epoch)
    log_ = storage.log
    if sid not in log_.snapshots:
        writer = storage.raw_snapshot_writer(sid)
        writer.append(snapshot.payload)
        writer.freeze()
        log_.snapshot_frozen(sid)
    if not (install and log_.truncate_to_latest_snapshot()):
        log_.delete_before_snapshot(sid)


def load_latest_snapshot(storage: ReplicaStorage) -> Snapshot | None:
    """The newest snapshot with an end offset > 0 (not the bootstrap 0-0), whole in memory."""
    sid = storage.log.latest_snapshot_id()
    if sid is None or sid.offset == 0:
        return None
    reader = storage.snapshot_reader(sid)
    try:
        chunks = []
        pos = 0
        while chunk := reader.read(pos, READ_CHUNK):
            chunks.append(chunk)
            pos += len(chunk)
    finally:
        reader.close()
    return Snapshot(OffsetAndEpoch(sid.epoch, sid.offset), b"".join(chunks))


class StorageStoppedError(Exception):
    """A storage operation refused because an earlier one failed (the node is stopping)."""


class StorageIO:
    """The one storage thread, fail-stop: the first operation that raises marks the storage
    failed, reports it once through `on_failure` (on the event loop), and every later operation
    is refused without touching the disk. A failed fsync is never retried, and `on_flushed` is
    never called after a failure, so no offset is reported durable past it."""

    def __init__(
        self,
        storage: ReplicaStorage,
        on_flushed: Callable[[int], None],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.storage = storage
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="metaquorum-storage")
        self._on_flushed = on_flushed
        self._on_failure = on_failure
        self._flush_wanted = -1
        self._flush_task: asyncio.Task[None] | None = None
        self.fsyncs = 0
        self.failed: BaseException | None = None

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        return asyncio.wrap_future(self._pool.submit(self._guard, fn, loop))

    def post(self, fn: Callable[[], T]) -> None:
        """`submit` without a result (appends, truncations): a failure is reported through
        `on_failure`, never left in an unread future."""
        self.submit(fn).add_done_callback(_retrieve)

    def _guard(self, fn: Callable[[], T], loop: asyncio.AbstractEventLoop) -> T:
        if self.failed is not None:
            raise StorageStoppedError(f"storage stopped after: {self.failed}")
        try:
            return fn()
        except BaseException as e:  # a storage failure must stop the node, not be lost
            self.failed = e
            if self._on_failure is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._on_failure, e)
            raise

    async def call(self, fn: Callable[[], T]) -> T:
        return await self.submit(fn)

    def request_flush(self, offset: int) -> None:
        self._flush_wanted = max(self._flush_wanted, offset)
        if self.failed is None and (self._flush_task is None or self._flush_task.done()):
            self._flush_task = asyncio.create_task(self._flush_loop())

    async def _flush_loop(self) -> None:
        done = -1
        while self._flush_wanted > done and self.failed is None:
            wanted = self._flush_wanted
            try:
                flushed = await self.submit(self.storage.log.flush)
            except BaseException:  # reported once by the guard; nothing is flushed past it
                return
            self.fsyncs += 1
            done = max(wanted, flushed)
            self._on_flushed(flushed)

    async def close(self) -> None:
        if self._flush_task is not None:
            try:
                await asyncio.wait_for(self._flush_task, 5)
            except BaseException:
                log.warning("flush did not finish at shutdown")
        flush = self.failed is None
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._pool, partial(self.storage.close, flush=flush)
            )
        except OSError as e:
            if flush:
                raise
            log.warning("closing the storage after a failure: %s", e)
        self._pool.shutdown(wait=True)


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()

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
import threading
from collections.abc import Callable
from functools import partial
from queue import SimpleQueue
from typing import TypeVar

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
    never called after a failure, so no offset is reported durable past it.

    The hop is cheap on the hot path (issue 28): jobs go through one `queue.SimpleQueue` to a
    plain thread; appends and truncations carry no future (a failure is reported through
    `on_failure`); a flush comes back as one `call_soon_threadsafe` of `on_flushed`, no task or
    future. Only `submit`/`call` (election state, snapshots, reads) make a future."""

    def __init__(
        self,
        storage: ReplicaStorage,
        on_flushed: Callable[[int], None],
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.storage = storage
        self._jobs: SimpleQueue[Callable[[], object] | None] = SimpleQueue()
        self._worker: threading.Thread | None = None  # started by the first job
        self._closed = False
        self._on_flushed = on_flushed
        self._on_failure = on_failure
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_wanted = -1
        self._flush_covers = -1  # `_flush_wanted` when the running flush was queued
        self._flushing = False  # a flush job is queued or running
        self._flush_done: asyncio.Future[None] | None = None  # for `close`
        self.fsyncs = 0
        self.failed: BaseException | None = None

    # --- the storage thread -------------------------------------------------------------------
    def _put(self, job: Callable[[], object] | None) -> None:
        if self._closed:
            raise RuntimeError("the storage thread is closed")
        if self._worker is None:
            self._worker = threading.Thread(
                target=self._work, name="metaquorum-storage", daemon=True
            )
            self._worker.start()
        self._jobs.put(job)

    def _work(self) -> None:
        jobs = self._jobs
        while (job := jobs.get()) is not None:
            job()

    def _run_guarded(self, fn: Callable[[], T]) -> T:
        """On the storage thread: refuse after a failure; the first failure is kept and
        reported to the loop once."""
        if self.failed is not None:
            raise StorageStoppedError(f"storage stopped after: {self.failed}")
        try:
            return fn()
        except BaseException as e:  # a storage failure must stop the node, not be lost
            self.failed = e
            if self._on_failure is not None and self._loop is not None:
                _to_loop(self._loop, self._on_failure, e)
            raise

    def _bind_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    # --- jobs from the loop ----------------------------------------------------------------
    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        return self._submit(partial(self._run_guarded, fn))

    def _submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        loop = self._bind_loop()
        fut: asyncio.Future[T] = loop.create_future()

        def job() -> None:
            try:
                result = fn()
            except BaseException as e:
                _to_loop(loop, _settle, fut, None, e)
                return
            _to_loop(loop, _settle, fut, result, None)

        self._put(job)
        return fut

    def post(self, fn: Callable[[], object]) -> None:
        """`submit` without a result (appends, truncations): a failure is reported through
        `on_failure`, never left in an unread future."""
        self._bind_loop()
        self._put(partial(self._post_job, fn))

    def _post_job(self, fn: Callable[[], object]) -> None:
        try:
            self._run_guarded(fn)
        except BaseException:  # reported once by `_run_guarded`, through `on_failure`
            return

    async def call(self, fn: Callable[[], T]) -> T:
        return await self.submit(fn)

    def request_flush(self, offset: int) -> None:
        """Group commit: while one fsync is queued or running, later requests only raise the
        wanted offset; when it reports, one more fsync covers everything submitted since."""
        self._flush_wanted = max(self._flush_wanted, offset)
        if self.failed is None and not self._flushing:
            self._queue_flush()

    def _queue_flush(self) -> None:
        loop = self._bind_loop()
        self._flushing = True
        self._flush_covers = self._flush_wanted
        self._put(partial(self._flush_job, loop))

    def _flush_job(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            flushed = self._run_guarded(self.storage.log.flush)
        except BaseException:  # reported once by the guard; nothing is flushed past it
            flushed = None
        _to_loop(loop, self._flush_returned, flushed)

    def _flush_returned(self, flushed: int | None) -> None:
        """On the loop: report the durable offset, then fsync again if more was wanted."""
        self._flushing = False
        if flushed is not None:
            self.fsyncs += 1
            done = max(self._flush_covers, flushed)
            self._on_flushed(flushed)
            if self._flush_wanted > done and self.failed is None:
                self._queue_flush()
        if not self._flushing and self._flush_done is not None:
            if not self._flush_done.done():
                self._flush_done.set_result(None)
            self._flush_done = None

    async def close(self) -> None:
        if self._flushing:
            self._flush_done = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(self._flush_done, 5)
            except BaseException:
                log.warning("flush did not finish at shutdown")
        flush = self.failed is None
        try:  # not refused after a failure: the files are closed, without a flush
            await self._submit(partial(self.storage.close, flush=flush))
        except OSError as e:
            if flush:
                raise
            log.warning("closing the storage after a failure: %s", e)
        self._closed = True
        if self._worker is not None:
            self._jobs.put(None)
            self._worker.join(5)


def _to_loop(loop: asyncio.AbstractEventLoop, fn: Callable[..., object], *args: object) -> None:
    """From the storage thread: run `fn(*args)` on the loop (dropped once the loop is closed)."""
    if not loop.is_closed():
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # closed between the check and the call
            return


def _settle(fut: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    if fut.done():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)  # type: ignore[arg-type]

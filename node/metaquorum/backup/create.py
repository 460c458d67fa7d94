"""`metaquorum backup create`: a backup of a live quorum, taken through the wire while it runs.

Role: read the leader's high watermark H when the backup starts; download the leader's latest
snapshot (FetchSnapshot) when its log starts after offset 0; fetch every batch from the
snapshot's end (or 0) up to H as an observer (Fetch) into Kafka-format segments; upload the
snapshot and the segments, then the manifest (backup/manifest.py) last.

Invariants:
- every record in a backup was committed when it was read: batches wholly below H were
  committed before the backup started; a batch straddling H is kept only once the leader's
  high watermark in the same answer covers it;
- the backup ends at a batch boundary `end` >= H (when the quorum committed while we read);
- the snapshot is re-downloaded from scratch if the leader replaces it midway, and the whole
  read restarts (at most `attempts` times) if the leader's log start passes our fetch offset;
- nothing named `manifest.json` is written until every data file is stored, so an interrupted
  backup is never listed as complete.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

import metaquorum
from metaquorum.admin.client import AdminClient, RetriableAdminError
from metaquorum.backup.destinations import Destination
from metaquorum.backup.fetcher import FetchAnswer, LogFetcher, SnapshotGoneError
from metaquorum.backup.files import (
    SEGMENT_BYTES,
    Membership,
    SegmentStager,
    check_snapshot,
    sha256_of,
)
from metaquorum.backup.manifest import MANIFEST, BackupError, FileEntry, Manifest, VoterEntry
from metaquorum.protocol.records import iter_batches
from metaquorum.protocol.types import Uuid
from metaquorum.storage.snapshots import OffsetAndEpoch, snapshot_file_name

T = TypeVar("T")
DEFAULT_OBSERVER_ID = 2_000_000_000  # far from any node id an operator picks


class _Restart(Exception):
    """The leader's log start passed our offset (it took a snapshot): read again."""


@dataclass
class BackupOptions:
    observer_id: int = DEFAULT_OBSERVER_ID
    timeout_s: float = 60.0
    segment_bytes: int = SEGMENT_BYTES
    attempts: int = 3


async def _retrying(timeout_s: float, fn: Callable[[], Awaitable[T]]) -> T:
    async for attempt in AsyncRetrying(
        stop=stop_after_delay(timeout_s),
        wait=wait_exponential(multiplier=0.05, max=1.0),
        retry=retry_if_exception_type(RetriableAdminError),
        reraise=True,
    ):
        with attempt:
            return await fn()
    raise AssertionError("unreachable")


def backup_name(created_ms: int, end_offset: int) -> str:
    stamp = datetime.fromtimestamp(created_ms / 1000, UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{end_offset:020d}"


async def create_backup(admin: AdminClient, dest: Destination, options: BackupOptions) -> Manifest:
    fetcher = LogFetcher(admin, options.observer_id, Uuid.random())
    await _retrying(options.timeout_s, fetcher.locate)
    for attempt in range(options.attempts):
        with tempfile.TemporaryDirectory(prefix="metaquorum-backup-") as tmp:
            try:
                manifest = await _read(fetcher, Path(tmp), options)
            except _Restart:
                if attempt + 1 == options.attempts:
                    raise BackupError(
                        "the leader's log start kept passing the backup's read offset "
                        "(snapshots taken faster than we read): retry, or raise "
                        "metadata.log.max.record.bytes.between.snapshots"
                    ) from None
                continue
            for f in manifest.files:
                dest.put_file(manifest.name, f.name, Path(tmp) / f.name)
            dest.put_bytes(manifest.name, MANIFEST, manifest.to_bytes())
            return manifest
    raise AssertionError("unreachable")


async def _read(fetcher: LogFetcher, work: Path, options: BackupOptions) -> Manifest:
    timeout = options.timeout_s
    first = await _retrying(timeout, lambda: _committed_fetch(fetcher, 0, 0))
    target = first.high_watermark
    membership = Membership()
    files: list[FileEntry] = []
    start, start_epoch = 0, 0
    if first.snapshot_id is not None:
        try:
            entry = await _download_snapshot(fetcher, first.snapshot_id, work, timeout)
        except SnapshotGoneError:
            raise _Restart() from None
        start, start_epoch = check_snapshot(work / entry.name, entry, membership)
        files.append(entry)
        target = max(target, start)
    stager = SegmentStager(work, options.segment_bytes)
    offset, epoch = start, start_epoch
    while offset < target:
        answer = await _retrying(timeout, partial(fetcher.fetch, offset, epoch))
        if answer.snapshot_id is not None:
            raise _Restart()
        progressed = False
        for batch in iter_batches(answer.records):
            batch.ensure_valid()
            if batch.base_offset != offset:
                raise BackupError(f"Fetch: batch at offset {batch.base_offset}, expected {offset}")
            committed = batch.last_offset < target or batch.last_offset < answer.high_watermark
            if batch.base_offset >= target or not committed:
                break
            data = answer.records[batch.position : batch.position + batch.size_in_bytes]
            stager.append(data, batch.base_offset, batch.next_offset)
            membership.see_batch(batch)
            offset, epoch, progressed = batch.next_offset, batch.partition_leader_epoch, True
        if not progressed:
            await asyncio.sleep(0.1)  # the straddling batch is not committed yet
    files += stager.finish()
    voters, source = membership.voter_entries(), "log"
    if not voters:
        quorum = await _retrying(timeout, fetcher.admin.describe_quorum)
        voters = [VoterEntry(v.replica_id, str(v.directory_id), []) for v in quorum.voters]
        source = "describe-quorum"
    created = int(time.time() * 1000)
    return Manifest(
        name=backup_name(created, offset),
        cluster_id=fetcher.cluster_id,
        created_ms=created,
        software_version=f"metaquorum {metaquorum.__version__}",
        start_offset=start,
        start_epoch=start_epoch,
        end_offset=offset,
        end_epoch=epoch,
        kraft_version=membership.kraft_version,
        voters=voters,
        voters_source=source,
        leader_id=fetcher.leader_id,
        leader_epoch=fetcher.epoch,
        files=files,
    )


async def _committed_fetch(fetcher: LogFetcher, offset: int, epoch: int) -> FetchAnswer:
    """The first Fetch: wait until the leader knows its high watermark (a new leader does not
    until it commits in its epoch)."""
    answer = await fetcher.fetch(offset, epoch)
    if answer.high_watermark < 0:
        raise RetriableAdminError("the leader does not know its high watermark yet")
    return answer


async def _download_snapshot(
    fetcher: LogFetcher, snapshot_id: tuple[int, int], work: Path, timeout_s: float
) -> FileEntry:
    name = snapshot_file_name(OffsetAndEpoch(*snapshot_id))
    path = work / name
    position, size = 0, -1
    with path.open("wb") as out:
        while size < 0 or position < size:
            chunk, size = await _retrying(
                timeout_s, partial(fetcher.fetch_snapshot_chunk, snapshot_id, position)
            )
            if not chunk and position < size:
                raise BackupError(f"FetchSnapshot: empty chunk at {position} of {size}")
            out.write(chunk)
            position += len(chunk)
    return FileEntry(name, "snapshot", size, sha256_of(path), snapshot_id[0], snapshot_id[0])

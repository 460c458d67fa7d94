"""Build a small backup on disk the way `backup create` lays one out (a snapshot, segments,
the manifest last), from records this test chooses."""

from __future__ import annotations

import time
from pathlib import Path

from metaquorum.backup.destinations import LocalDestination
from metaquorum.backup.files import Membership, SegmentStager, sha256_of
from metaquorum.backup.manifest import MANIFEST, FileEntry, Manifest
from metaquorum.backup.reform import ListenerAddress, single_voter
from metaquorum.protocol.control_records import build_control_batch
from metaquorum.protocol.messages import KRaftVersionRecord
from metaquorum.protocol.records import build_batch, iter_batches
from metaquorum.protocol.types import Uuid
from metaquorum.storage.snapshot_records import SnapshotWriter
from metaquorum.storage.snapshots import OffsetAndEpoch

CLUSTER = "IOoQl4zTThqhIBRuWE4s0A"
OLD_VOTERS = single_voter(7, Uuid.random(), [ListenerAddress("CONTROLLER", "old-7", 9093)])


def make_backup(
    root: Path, *, snapshot_at: int | None = 5, records: int = 20, epochs: tuple[int, ...] = (1, 2)
) -> Manifest:
    """A backup of `records` single-record batches ("k<i>=v<i>") after an optional snapshot
    holding k0..k<snapshot_at - 1>, epochs spread over `epochs`; a Voters control batch first."""
    work = root / "stage"
    work.mkdir(parents=True)
    now = int(time.time() * 1000)
    files: list[FileEntry] = []
    membership = Membership()
    start, start_epoch = 0, 0
    if snapshot_at is not None:
        sid = OffsetAndEpoch(snapshot_at, epochs[0])
        w = SnapshotWriter(
            work,
            sid,
            last_contained_log_timestamp=now,
            timestamp_ms=now,
            kraft_version=1,
            voters=OLD_VOTERS,
        )
        w.append([b"k%d=v%d" % (i, i) for i in range(snapshot_at)])
        path = w.freeze()
        path.chmod(0o600)
        files.append(
            FileEntry(
                path.name,
                "snapshot",
                path.stat().st_size,
                sha256_of(path),
                snapshot_at,
                snapshot_at,
            )
        )
        start, start_epoch = sid.offset, sid.epoch
        membership.see(KRaftVersionRecord(version=0, kraft_version=1), OLD_VOTERS)
    stager = SegmentStager(work, segment_bytes=600)
    offset, epoch = start, start_epoch
    for i in range(records):
        epoch = epochs[min(len(epochs) - 1, i * len(epochs) // max(records, 1))]
        if i == 0:
            batch = build_control_batch(
                offset,
                epoch,
                [KRaftVersionRecord(version=0, kraft_version=1), OLD_VOTERS],
                timestamp_ms=now,
            )
        else:
            batch = build_batch(offset, epoch, [b"k%d=v%d" % (offset, offset)], timestamp_ms=now)
        (b,) = iter_batches(batch)
        membership.see_batch(b)
        stager.append(batch, offset, b.next_offset)
        offset = b.next_offset
    files += stager.finish()
    m = Manifest(
        name="b1",
        cluster_id=CLUSTER,
        created_ms=now,
        software_version="test",
        start_offset=start,
        start_epoch=start_epoch,
        end_offset=offset,
        end_epoch=epoch,
        kraft_version=membership.kraft_version,
        voters=membership.voter_entries(),
        voters_source="log",
        leader_id=1,
        leader_epoch=epoch,
        files=files,
    )
    dest = LocalDestination(root / "dest", str(root / "dest"))
    (root / "dest").mkdir()
    for f in files:
        dest.put_file("b1", f.name, work / f.name)
    dest.put_bytes("b1", MANIFEST, m.to_bytes())
    return m

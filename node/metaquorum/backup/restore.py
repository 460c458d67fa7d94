"""`metaquorum backup restore`: format a fresh metadata log directory from a backup.

Role: refuse a directory that is not empty; download and verify the backup (backup/verify.py)
straight into `<dir>/__cluster_metadata-0/` under the files' own names (the snapshot
`<end offset>-<epoch>.checkpoint`, made read-only as Kafka leaves it, and the segments
`<base offset>.log`); without a snapshot, write the bootstrap checkpoint 0-0 with the new voter
set (as `storage format --standalone`); re-form the quorum around this node alone at the end of
the backup (backup/reform.py: a new epoch, KRaftVersion(1) + Voters{this node}); write
`partition.metadata` and, last, `meta.properties` with the backup's cluster id and this node's
id and (new) directory id.

Invariants: on any refusal or failure before the end, what this command wrote is removed and the
directory is left as it was (absent or empty); an interrupted restore has no meta.properties,
so a node refuses to start on it. The node then holds exactly the records below the backup's
end offset, plus the one voters batch after them; nothing else is invented.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from metaquorum.backup.destinations import Destination
from metaquorum.backup.manifest import BackupError
from metaquorum.backup.reform import (
    ListenerAddress,
    ReformResult,
    reform_single_voter,
    single_voter,
)
from metaquorum.backup.verify import VerifyReport, verify_backup
from metaquorum.protocol.types import METADATA_RAFT_TOPIC, Uuid
from metaquorum.storage.fsutil import atomic_write, fsync_dir
from metaquorum.storage.meta_properties import MetaProperties, write_meta_properties
from metaquorum.storage.replica import PARTITION_METADATA
from metaquorum.storage.snapshot_records import SnapshotWriter
from metaquorum.storage.snapshots import BOOTSTRAP_SNAPSHOT_ID


@dataclass(frozen=True, slots=True)
class RestoreResult:
    report: VerifyReport
    reform: ReformResult
    directory_id: Uuid


def restore_backup(
    dest: Destination,
    name: str,
    log_dir: Path,
    *,
    node_id: int,
    endpoints: list[ListenerAddress],
    directory_id: Uuid | None = None,
    expect_cluster_id: str | None = None,
    fsync: bool = True,
) -> RestoreResult:
    if log_dir.exists() and (not log_dir.is_dir() or any(log_dir.iterdir())):
        raise BackupError(
            f"{log_dir} is not empty: restore only into a new, empty metadata log directory"
        )
    if not endpoints:
        raise BackupError("give this node's controller endpoint: --endpoint NAME://host:port")
    created = not log_dir.exists()
    log_dir.mkdir(parents=True, exist_ok=True)
    partition = log_dir / METADATA_RAFT_TOPIC.partition_dir
    partition.mkdir()
    try:
        report = verify_backup(dest, name, partition)
        manifest = report.manifest
        if expect_cluster_id is not None and manifest.cluster_id != expect_cluster_id:
            raise BackupError(
                f"backup {name} is of cluster {manifest.cluster_id}, not {expect_cluster_id}: "
                "restore a backup of this cluster, or restore into a new quorum"
            )
        dir_id = directory_id or Uuid.random()
        voters = single_voter(node_id, dir_id, endpoints)
        now = int(time.time() * 1000)
        if manifest.snapshot is not None:
            os.chmod(partition / manifest.snapshot.name, 0o400)
        else:
            SnapshotWriter(
                partition,
                BOOTSTRAP_SNAPSHOT_ID,
                last_contained_log_timestamp=now,
                timestamp_ms=now,
                kraft_version=1,
                voters=voters,
                fsync=fsync,
            ).freeze()
        reform = reform_single_voter(partition, voters, now_ms=now, fsync=fsync)
        text = f"version: 0\ntopic_id: {METADATA_RAFT_TOPIC.id}"
        atomic_write(partition / PARTITION_METADATA, text.encode("ascii"), fsync=fsync)
        if fsync:
            fsync_dir(partition)
        write_meta_properties(
            log_dir, MetaProperties(1, manifest.cluster_id, node_id, dir_id), fsync=fsync
        )
    except BaseException:
        shutil.rmtree(partition, ignore_errors=True)
        if created:
            shutil.rmtree(log_dir, ignore_errors=True)
        raise
    return RestoreResult(report, reform, dir_id)

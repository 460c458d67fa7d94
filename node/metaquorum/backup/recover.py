"""`metaquorum storage recover`: re-form a quorum that lost its majority around one survivor's
own metadata log directory, by hand (the unsafe path, never automatic; docs/backup.md).

Role: open the survivor's log as the node would (a torn tail is cut; any other damage is
refused); find this node's endpoints in its latest voter set (the newest VotersRecord in its
snapshot and log) unless `--endpoint` gives them; re-form the quorum around it alone
(backup/reform.py). Its directory id is kept.

The rule for what is kept: every record of the survivor's log (after the torn-tail cut). A
replica cannot prove offline how far the quorum had committed: Kafka and metaquorum do not
persist the high watermark, and a follower learns the leader's on its next Fetch, so committed
records may lie beyond the last high watermark it saw. Cutting at any offset would risk
dropping committed records; keeping the whole log is what Raft itself does when this replica
wins an election (a new leader commits every entry it holds), so nothing is invented: each
record kept was written by a leader of its epoch. Records only the lost voters held are lost.

Invariants: the recovered log is the survivor's log (a prefix of it when a torn tail was cut)
plus one voters batch; quorum-state is rewritten only after that batch is durable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from metaquorum.backup.files import Membership
from metaquorum.backup.manifest import BackupError
from metaquorum.backup.reform import (
    ListenerAddress,
    ReformResult,
    reform_single_voter,
    single_voter,
)
from metaquorum.protocol.control_records import snapshot_control
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.records import iter_batches
from metaquorum.protocol.types import METADATA_RAFT_TOPIC
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.meta_properties import read_meta_properties
from metaquorum.storage.snapshots import RawSnapshotReader


@dataclass(frozen=True, slots=True)
class RecoverResult:
    node_id: int
    reform: ReformResult
    cut_bytes: int  # a torn tail cut at open


def _latest_membership(log: MetadataLog) -> Membership:
    membership = Membership()
    latest = log.latest_snapshot_id()
    if latest is not None:
        with RawSnapshotReader.open(log.directory, latest) as reader:
            membership.see(*snapshot_control(reader.read(0, reader.size)))
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        for batch in iter_batches(data):
            membership.see_batch(batch)
            offset = batch.next_offset
    return membership


def recover_data_dir(
    log_dir: Path, *, endpoints: list[ListenerAddress] | None = None, fsync: bool = True
) -> RecoverResult:
    try:
        meta = read_meta_properties(log_dir)
    except ProtocolError as e:
        raise BackupError(str(e)) from None
    if meta is None or meta.node_id is None or meta.directory_id is None:
        raise BackupError(
            f"{log_dir} has no meta.properties with node.id and directory.id: point --data-dir "
            "at the survivor's metadata.log.dir"
        )
    partition = log_dir / METADATA_RAFT_TOPIC.partition_dir
    if not partition.is_dir():
        raise BackupError(f"{partition} does not exist: {log_dir} holds no metadata log")
    try:
        log = MetadataLog.open(partition, LogConfig(fsync=fsync))
    except ProtocolError as e:
        raise BackupError(f"the survivor's log cannot be opened as it is: {e}") from None
    try:
        cut = log.recovery.truncated_bytes
        membership = _latest_membership(log)
    finally:
        log.close()
    if not endpoints:
        me = next(
            (
                v
                for v in (membership.voters.voters if membership.voters else [])
                if v.voter_id == meta.node_id
            ),
            None,
        )
        if me is None or not me.endpoints:
            raise BackupError(
                f"node {meta.node_id} is not in the latest voter set of {log_dir}: give its "
                "controller endpoint with --endpoint NAME://host:port"
            )
        endpoints = [ListenerAddress(e.name, e.host, e.port) for e in me.endpoints]
    voters = single_voter(meta.node_id, meta.directory_id, endpoints)
    reform = reform_single_voter(partition, voters, now_ms=int(time.time() * 1000), fsync=fsync)
    return RecoverResult(meta.node_id, reform, cut)

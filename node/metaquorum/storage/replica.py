"""One replica's durable state in its `metadata.log.dir`: the entry point the running node uses
(reference §4.1; KIP-595, KIP-630, KIP-853).

Role: open a formatted metadata log directory, refusing a foreign or unformatted one, and give
the node what the Raft core's effects need:

    PersistElectionState -> write_election_state (quorum-state, atomic + fsync)
    Append (leader)      -> log.append_as_leader / log.append_records_as_leader
    Append (follower)    -> log.append_as_follower (Fetch response bytes as they came)
    Truncate             -> log.truncate_to
    Flush                -> log.flush() -> flushed offset (release durability barriers)
    Fetch (serve)        -> log.read(offset, max_bytes).records (bytes, not re-encoded)
    DivergingEpoch       -> log.end_offset_for_epoch(epoch)
    snapshots            -> snapshot_writer / raw_snapshot_writer (FetchSnapshot download),
                            snapshot_reader (serve FetchSnapshot), log.delete_before_snapshot,
                            log.truncate_to_latest_snapshot

Invariants: the directory must hold a version-1 meta.properties whose node.id (and cluster.id,
when the caller knows it) match, else `StorageError` naming the file and the fix; the
partition directory `__cluster_metadata-0` and its `partition.metadata` (topic id
`AAAAAAAAAAAAAAAAAAAAAQ`, as Kafka writes it) exist once opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import VotersRecord
from metaquorum.protocol.types import METADATA_RAFT_TOPIC, RaftTopic
from metaquorum.storage.fsutil import atomic_write
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.meta_properties import META_PROPERTIES, MetaProperties, read_meta_properties
from metaquorum.storage.quorum_state import QuorumStateFile, read_quorum_state, write_quorum_state
from metaquorum.storage.snapshot_records import SnapshotWriter
from metaquorum.storage.snapshots import OffsetAndEpoch, RawSnapshotReader, RawSnapshotWriter

PARTITION_METADATA = "partition.metadata"


class StorageError(ProtocolError):
    """A metadata log directory this node must not use as it is."""


@dataclass
class ReplicaStorage:
    log_dir: Path
    meta: MetaProperties
    log: MetadataLog
    fsync: bool = True
    topic: RaftTopic = METADATA_RAFT_TOPIC

    @property
    def partition_dir(self) -> Path:
        return self.log_dir / self.topic.partition_dir

    def read_election_state(self) -> QuorumStateFile | None:
        return read_quorum_state(self.partition_dir)

    def write_election_state(self, state: QuorumStateFile) -> None:
        write_quorum_state(self.partition_dir, state, fsync=self.fsync)

    def snapshot_writer(
        self,
        snapshot_id: OffsetAndEpoch,
        *,
        last_contained_log_timestamp: int,
        timestamp_ms: int,
        kraft_version: int = 0,
        voters: VotersRecord | None = None,
    ) -> SnapshotWriter:
        return SnapshotWriter(
            self.partition_dir,
            snapshot_id,
            last_contained_log_timestamp=last_contained_log_timestamp,
            timestamp_ms=timestamp_ms,
            kraft_version=kraft_version,
            voters=voters,
            fsync=self.fsync,
        )

    def raw_snapshot_writer(self, snapshot_id: OffsetAndEpoch) -> RawSnapshotWriter:
        """For a follower downloading a snapshot with FetchSnapshot: append, then freeze and
        call `log.snapshot_frozen(snapshot_id)`."""
        return RawSnapshotWriter(self.partition_dir, snapshot_id, fsync=self.fsync)

    def snapshot_reader(self, snapshot_id: OffsetAndEpoch) -> RawSnapshotReader:
        if snapshot_id not in self.log.snapshots:
            raise StorageError(f"no snapshot {snapshot_id} in {self.partition_dir}")
        return RawSnapshotReader.open(self.partition_dir, snapshot_id)

    def close(self, *, flush: bool = True) -> None:
        self.log.close(flush=flush)


def open_replica_storage(
    log_dir: Path,
    *,
    node_id: int,
    cluster_id: str | None = None,
    config: LogConfig | None = None,
    topic: RaftTopic = METADATA_RAFT_TOPIC,
) -> ReplicaStorage:
    """Open (and recover) the metadata log directory of node `node_id` (`topic`: the raft
    topic's partition directory, `__cluster_metadata-0` but for a TestRaftServer quorum)."""
    meta_path = log_dir / META_PROPERTIES
    meta = read_meta_properties(log_dir)
    if meta is None:
        raise StorageError(
            f"{meta_path} not found: {log_dir} is not formatted; run `metaquorum storage format`"
        )
    if meta.version != 1:
        raise StorageError(f"{meta_path}: version {meta.version}, a KRaft node needs version 1")
    if meta.node_id != node_id:
        raise StorageError(
            f"{meta_path}: node.id {meta.node_id} but this node is {node_id}: "
            "point metadata.log.dir at this node's directory"
        )
    if cluster_id is not None and meta.cluster_id != cluster_id:
        raise StorageError(
            f"{meta_path}: cluster.id {meta.cluster_id} but the quorum's is {cluster_id}: "
            "this directory belongs to another cluster"
        )
    cfg = config or LogConfig()
    partition = log_dir / topic.partition_dir
    log = MetadataLog.open(partition, cfg)
    pm = partition / PARTITION_METADATA
    if not pm.exists():
        text = f"version: 0\ntopic_id: {topic.id}"
        atomic_write(pm, text.encode("ascii"), fsync=cfg.fsync)
    return ReplicaStorage(log_dir, meta, log, cfg.fsync, topic)

"""Reading a live quorum's committed log through the wire, as a KRaft observer (KIP-595 Fetch,
KIP-630 FetchSnapshot) — how `metaquorum backup create` gets its bytes.

Role: `LogFetcher` finds the leader (DescribeCluster, KIP-919), sends Fetch v17 with a
non-voter ReplicaId (an observer, as a broker fetches `__cluster_metadata`) from offset 0; a
leader whose log starts later answers with its latest SnapshotId, which `fetch_snapshot`
downloads with FetchSnapshot v1 in chunks; `fetch` then returns the batches after it.

Why the wire and not the nodes' volumes: a Kubernetes Job (or any host) can reach the
controller listener, not another pod's PVC; the leader serves only what it holds, CRC-checked
as stored; the quorum keeps running and serving while the backup reads (docs/backup.md).

Invariants: a leader change or a fenced epoch makes the fetcher find the leader again and carry
on from the same offset (records below the high watermark are the same on every leader, Raft's
leader completeness); bytes are returned as the leader stores them, never re-encoded.
"""

from __future__ import annotations

from dataclasses import dataclass

from metaquorum.admin.client import AdminClient, AdminError, RetriableAdminError
from metaquorum.net.endpoint import Endpoint
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    FetchRequestData,
    FetchResponseData,
    FetchSnapshotRequestData,
    FetchSnapshotResponseData,
)
from metaquorum.protocol.types import METADATA_RAFT_TOPIC, Uuid

FETCH_VERSION = 17
FETCH_SNAPSHOT_VERSION = 1
CHUNK_BYTES = 1 << 20
# Errors after which the leader is looked up again (it moved, or our epoch is stale).
_RELOCATE = {
    Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.FENCED_LEADER_EPOCH,
    Errors.UNKNOWN_LEADER_EPOCH,
    Errors.NOT_CONTROLLER,
}


class SnapshotGoneError(AdminError):
    """The leader no longer holds the snapshot being downloaded (it took a newer one)."""


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    records: bytes
    high_watermark: int
    log_start_offset: int
    snapshot_id: tuple[int, int] | None  # (end offset, epoch) when the offset is below it


@dataclass
class LogFetcher:
    admin: AdminClient
    observer_id: int
    directory_id: Uuid
    cluster_id: str = ""
    leader: Endpoint | None = None
    leader_id: int = -1
    epoch: int = -1

    async def locate(self) -> None:
        cluster = await self.admin.describe_cluster()
        quorum = await self.admin.describe_quorum()
        leader = cluster.controllers.get(quorum.leader_id)
        if leader is None:
            raise RetriableAdminError("the quorum has no leader yet")
        self.cluster_id = cluster.cluster_id
        self.leader, self.leader_id, self.epoch = leader, quorum.leader_id, quorum.leader_epoch

    async def _call(self, api_key: int, version: int, message: object) -> object:
        if self.leader is None:
            await self.locate()
        assert self.leader is not None
        try:
            return await self.admin.request(self.leader, api_key, version, message)
        except RetriableAdminError:
            self.leader = None
            raise

    def _relocate_on(self, code: int, what: str) -> None:
        if code == 0:
            return
        error = Errors(code)
        if error in _RELOCATE:
            self.leader = None
            raise RetriableAdminError(f"{what}: {error.name}")
        if error == Errors.INCONSISTENT_CLUSTER_ID:
            raise AdminError(f"{what}: INCONSISTENT_CLUSTER_ID (the quorum changed under us)")
        raise AdminError(f"{what}: {error.name}")

    async def fetch(self, offset: int, last_epoch: int) -> FetchAnswer:
        """One observer Fetch from `offset` (retried through leader moves by the caller)."""
        if self.leader is None:
            await self.locate()
        request = FetchRequestData(
            cluster_id=self.cluster_id,
            replica_state=FetchRequestData.ReplicaState(replica_id=self.observer_id),
            max_wait_ms=0,
            max_bytes=CHUNK_BYTES,
            topics=[
                FetchRequestData.FetchTopic(
                    topic=METADATA_RAFT_TOPIC.name,
                    topic_id=METADATA_RAFT_TOPIC.id,
                    partitions=[
                        FetchRequestData.FetchPartition(
                            partition=0,
                            current_leader_epoch=self.epoch,
                            fetch_offset=offset,
                            last_fetched_epoch=last_epoch,
                            partition_max_bytes=CHUNK_BYTES,
                            replica_directory_id=self.directory_id,
                        )
                    ],
                )
            ],
        )
        r = await self._call(ApiKeys.FETCH, FETCH_VERSION, request)
        assert isinstance(r, FetchResponseData)
        self._relocate_on(r.error_code, "Fetch")
        if len(r.responses) != 1 or len(r.responses[0].partitions) != 1:
            raise AdminError("Fetch: expected one partition of __cluster_metadata in the answer")
        p = r.responses[0].partitions[0]
        self._relocate_on(p.error_code, "Fetch")
        if p.diverging_epoch.epoch >= 0:
            raise AdminError(
                f"Fetch: the leader reports a diverging epoch {p.diverging_epoch.epoch} at "
                f"offset {p.diverging_epoch.end_offset} below its high watermark: retry the backup"
            )
        sid = p.snapshot_id
        snapshot = (sid.end_offset, sid.epoch) if sid.epoch >= 0 and sid.end_offset >= 0 else None
        return FetchAnswer(bytes(p.records or b""), p.high_watermark, p.log_start_offset, snapshot)

    async def fetch_snapshot_chunk(
        self, snapshot_id: tuple[int, int], position: int
    ) -> tuple[bytes, int]:
        """(bytes at `position`, the snapshot's total size)."""
        if self.leader is None:
            await self.locate()
        request = FetchSnapshotRequestData(
            cluster_id=self.cluster_id,
            replica_id=self.observer_id,
            max_bytes=CHUNK_BYTES,
            topics=[
                FetchSnapshotRequestData.TopicSnapshot(
                    name=METADATA_RAFT_TOPIC.name,
                    partitions=[
                        FetchSnapshotRequestData.PartitionSnapshot(
                            partition=0,
                            current_leader_epoch=self.epoch,
                            snapshot_id=FetchSnapshotRequestData.SnapshotId(
                                end_offset=snapshot_id[0], epoch=snapshot_id[1]
                            ),
                            position=position,
                            replica_directory_id=self.directory_id,
                        )
                    ],
                )
            ],
        )
        r = await self._call(ApiKeys.FETCH_SNAPSHOT, FETCH_SNAPSHOT_VERSION, request)
        assert isinstance(r, FetchSnapshotResponseData)
        self._relocate_on(r.error_code, "FetchSnapshot")
        if len(r.topics) != 1 or len(r.topics[0].partitions) != 1:
            raise AdminError("FetchSnapshot: expected one partition in the answer")
        p = r.topics[0].partitions[0]
        if p.error_code == Errors.SNAPSHOT_NOT_FOUND:
            raise SnapshotGoneError(
                "FetchSnapshot: SNAPSHOT_NOT_FOUND (the leader took a newer one)"
            )
        self._relocate_on(p.error_code, "FetchSnapshot")
        if p.position != position:
            raise AdminError(f"FetchSnapshot: asked position {position}, got {p.position}")
        return bytes(p.unaligned_records or b""), p.size

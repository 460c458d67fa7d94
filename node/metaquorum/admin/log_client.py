"""Async client for appending to and reading the replicated log (`__cluster_metadata`-0).

Role: `append(values)` sends one Produce (acks=-1, v13) batch to the leader and returns the
base offset once the records are committed; `read(offset)` is a consumer Fetch (ReplicaId -1)
returning committed records from `offset`. The leader is found with DescribeCluster
(EndpointType 2, KIP-919) and re-found on NOT_LEADER_OR_FOLLOWER or a lost connection, with
tenacity's bounded exponential backoff.

Invariants: an append that returns has been committed by the quorum; a retried append may be
applied twice if the first attempt committed but its answer was lost (Produce here carries no
producer id / sequence, so there is no idempotence): callers that need exactly-once must
deduplicate by content.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from metaquorum.admin.client import AdminClient, AdminError, RetriableAdminError
from metaquorum.net.endpoint import Endpoint
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    FetchRequestData,
    FetchResponseData,
    ProduceRequestData,
    ProduceResponseData,
)
from metaquorum.protocol.records import build_batch, iter_batches
from metaquorum.protocol.types import METADATA_RAFT_TOPIC, RaftTopic

T = TypeVar("T")
FETCH_VERSION = 17
PRODUCE_VERSION = 13  # topic id (Uuid.ONE for __cluster_metadata), Kafka 4.3.1's newest


@dataclass(frozen=True, slots=True)
class LogRecord:
    offset: int
    timestamp: int
    value: bytes


class LogClient:
    def __init__(
        self,
        bootstrap: list[Endpoint],
        *,
        timeout_s: float = 30.0,
        request_timeout_s: float = 10,
        tls: Callable[[], ssl.SSLContext] | None = None,
        topic: RaftTopic = METADATA_RAFT_TOPIC,
    ) -> None:
        self.topic = topic  # the raft topic (another only beside Kafka's TestRaftServer)
        self.admin = AdminClient(bootstrap, timeout_s=timeout_s, tls=tls)
        self.admin.request_timeout_s = request_timeout_s
        self.timeout_s = timeout_s
        self._leader: Endpoint | None = None
        self.retries = 0

    async def close(self) -> None:
        await self.admin.close()

    async def _leader_endpoint(self) -> Endpoint:
        if self._leader is None:
            cluster = await self.admin.describe_cluster()
            ep = cluster.controllers.get(cluster.controller_id)
            if ep is None:
                raise RetriableAdminError("no leader yet")
            self._leader = ep
        return self._leader

    async def _retrying(self, fn: Callable[[], Awaitable[T]]) -> T:
        retrying = AsyncRetrying(
            stop=stop_after_delay(self.timeout_s),
            wait=wait_exponential(multiplier=0.02, max=0.5),
            retry=retry_if_exception_type(RetriableAdminError),
            reraise=True,
        )
        first = True
        async for attempt in retrying:
            with attempt:
                if not first:
                    self.retries += 1
                first = False
                return await fn()
        raise AssertionError("unreachable")

    # --- append ------------------------------------------------------------------------------
    async def append(self, values: Sequence[bytes], *, timeout_ms: int = 10000) -> int:
        batch = build_batch(0, -1, list(values), timestamp_ms=int(time.time() * 1000))
        request = ProduceRequestData(
            acks=-1,
            timeout_ms=timeout_ms,
            topic_data=[
                ProduceRequestData.TopicProduceData(
                    name=self.topic.name,
                    topic_id=self.topic.id,
                    partition_data=[
                        ProduceRequestData.PartitionProduceData(index=0, records=batch)
                    ],
                )
            ],
        )

        async def once() -> int:
            leader = await self._leader_endpoint()
            try:
                r = await self.admin._request(leader, ApiKeys.PRODUCE, PRODUCE_VERSION, request)
            except RetriableAdminError:
                self._leader = None
                raise
            assert isinstance(r, ProduceResponseData)
            p = r.responses[0].partition_responses[0]
            if p.error_code == Errors.NOT_LEADER_OR_FOLLOWER:
                self._leader = None
                raise RetriableAdminError("leader moved")
            if p.error_code == Errors.REQUEST_TIMED_OUT:
                self._leader = None  # maybe an isolated leader that cannot commit
                raise RetriableAdminError("append timed out (not committed in time)")
            if p.error_code != 0:
                raise AdminError(f"append failed: {Errors(p.error_code).name}: {p.error_message}")
            return p.base_offset

        return await self._retrying(once)

    # --- read --------------------------------------------------------------------------------
    async def read(
        self, offset: int, *, max_wait_ms: int = 500, max_bytes: int = 1 << 20
    ) -> tuple[list[LogRecord], int, int]:
        """(committed data records from `offset`, the next offset to read, the leader's HW);
        control batches (LeaderChange) are skipped but advance the next offset."""
        request = FetchRequestData(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            max_bytes=max_bytes,
            topics=[
                FetchRequestData.FetchTopic(
                    topic=self.topic.name,
                    topic_id=self.topic.id,
                    partitions=[
                        FetchRequestData.FetchPartition(
                            partition=0, fetch_offset=offset, partition_max_bytes=max_bytes
                        )
                    ],
                )
            ],
        )

        async def once() -> tuple[list[LogRecord], int, int]:
            leader = await self._leader_endpoint()
            try:
                r = await self.admin._request(leader, ApiKeys.FETCH, FETCH_VERSION, request)
            except RetriableAdminError:
                self._leader = None
                raise
            assert isinstance(r, FetchResponseData)
            if r.error_code != 0:
                raise AdminError(f"fetch failed: {Errors(r.error_code).name}")
            p = r.responses[0].partitions[0]
            if p.error_code == Errors.NOT_LEADER_OR_FOLLOWER:
                self._leader = None
                raise RetriableAdminError("leader moved")
            if p.error_code != 0:
                raise AdminError(f"fetch failed: {Errors(p.error_code).name}")
            out: list[LogRecord] = []
            next_offset = offset
            for batch in iter_batches(p.records or b""):
                batch.ensure_valid()
                next_offset = max(next_offset, batch.last_offset + 1)
                if batch.is_control:
                    continue
                for rec in batch:
                    if rec.offset >= offset:
                        out.append(LogRecord(rec.offset, rec.timestamp, rec.value or b""))
            return out, next_offset, p.high_watermark

        return await self._retrying(once)

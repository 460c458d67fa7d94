"""Admin client for a KRaft quorum through its controllers (KIP-919 `--bootstrap-controller`).

Role: what Kafka's `KafkaAdminClient` does for `kafka-metadata-quorum --bootstrap-controller`:
DescribeCluster (EndpointType 2) against any bootstrap controller to learn the cluster id, the
controllers and the active controller (the Raft leader), then DescribeQuorum on the leader.
A NOT_LEADER_OR_FOLLOWER answer (or a lost connection) clears the leader and retries from
metadata, with tenacity's bounded exponential backoff.

Invariants: a DescribeQuorum reply is accepted only with exactly one topic `__cluster_metadata`
holding exactly partition 0 and no error (as the Java client checks); `AdminError` carries a
one-line message fit for a CLI. With `tls` (a client config's `security.protocol=SSL`,
net/tls.py) every connection is TLS; a refused handshake fails at once, not retried.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential,
)

from metaquorum.net.connection import KafkaConnection, TlsError
from metaquorum.net.endpoint import Endpoint, parse_endpoint
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.errors import Errors, ProtocolError
from metaquorum.protocol.messages import (
    DescribeClusterRequestData,
    DescribeClusterResponseData,
    DescribeQuorumRequestData,
    DescribeQuorumResponseData,
)
from metaquorum.protocol.types import Uuid

METADATA_TOPIC = "__cluster_metadata"
DESCRIBE_CLUSTER_VERSION = 1
DESCRIBE_QUORUM_VERSION = 2


class AdminError(Exception):
    """A one-line, user-facing failure."""


class RetriableAdminError(AdminError):
    pass


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    replica_id: int
    directory_id: Uuid
    log_end_offset: int
    last_fetch_timestamp: int  # -1: unknown
    last_caught_up_timestamp: int  # -1: unknown


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[ReplicaInfo]
    observers: list[ReplicaInfo]
    nodes: dict[int, list[str]] = field(default_factory=dict)  # id -> ["NAME://host:port"]


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    cluster_id: str
    controller_id: int
    controllers: dict[int, Endpoint]


def parse_bootstrap(text: str) -> list[Endpoint]:
    items = [s for s in text.split(",") if s.strip()]
    if not items:
        raise AdminError("--bootstrap-controller needs host:port[,host:port...]")
    try:
        return [parse_endpoint(s, "--bootstrap-controller") for s in items]
    except ValueError as e:
        raise AdminError(str(e)) from None


def _endpoint_str(name: str, host: str, port: int) -> str:
    return f"{name}://[{host}]:{port}" if ":" in host else f"{name}://{host}:{port}"


class AdminClient:
    def __init__(
        self,
        bootstrap: list[Endpoint],
        *,
        timeout_s: float = 30.0,
        tls: Callable[[], ssl.SSLContext] | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.tls = tls
        self.timeout_s = timeout_s
        self.request_timeout_s = min(5.0, timeout_s)
        self._connections: dict[tuple[str, int], KafkaConnection] = {}
        self._rotation = 0

    def _conn(self, ep: Endpoint) -> KafkaConnection:
        key = (ep.host, ep.port)
        if key not in self._connections:
            self._connections[key] = KafkaConnection(
                ep.host, ep.port, client_id="metaquorum-admin", tls=self.tls
            )
        return self._connections[key]

    async def close(self) -> None:
        for c in self._connections.values():
            await c.close()

    async def _request(self, ep: Endpoint, api_key: int, version: int, message: Any) -> Any:
        try:
            return await self._conn(ep).request(api_key, version, message, self.request_timeout_s)
        except TlsError as e:
            if e.certain:  # a certificate refused: retrying will not change it
                raise AdminError(f"{e} (check the ssl.* settings of --command-config)") from None
            raise RetriableAdminError(str(e)) from None
        except (ConnectionError, TimeoutError, OSError) as e:
            raise RetriableAdminError(f"{ep}: {e or type(e).__name__}") from None
        except ProtocolError as e:
            raise AdminError(f"{ep}: bad response: {e}") from None

    async def request(self, ep: Endpoint, api_key: int, version: int, message: Any) -> Any:
        """One request to `ep` (RetriableAdminError on a lost connection or timeout)."""
        return await self._request(ep, api_key, version, message)

    async def _retrying(self, fn: Any) -> Any:
        retrying = AsyncRetrying(
            stop=stop_after_delay(self.timeout_s),
            wait=wait_exponential(multiplier=0.05, max=1.0),
            retry=retry_if_exception_type(RetriableAdminError),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await fn()
        raise AssertionError("unreachable")

    async def _describe_cluster_once(self) -> ClusterInfo:
        """Ask the bootstrap controllers in turn (rotating the start, so one stale or isolated
        node cannot pin us) and prefer the first answer that names a known leader."""
        last: Exception | None = None
        fallback: ClusterInfo | None = None
        n = len(self.bootstrap)
        start = self._rotation
        self._rotation = (self._rotation + 1) % n
        for i in range(n):
            ep = self.bootstrap[(start + i) % n]
            try:
                r = await self._request(
                    ep,
                    ApiKeys.DESCRIBE_CLUSTER,
                    DESCRIBE_CLUSTER_VERSION,
                    DescribeClusterRequestData(endpoint_type=2),
                )
            except RetriableAdminError as e:
                last = e
                continue
            assert isinstance(r, DescribeClusterResponseData)
            if r.error_code != 0:
                raise AdminError(f"DescribeCluster: {Errors(r.error_code).name}: {r.error_message}")
            controllers = {b.broker_id: Endpoint(b.host, b.port) for b in r.brokers}
            info = ClusterInfo(r.cluster_id, r.controller_id, controllers)
            if info.controller_id in controllers:
                return info
            fallback = fallback or info
        if fallback is not None:
            return fallback
        raise RetriableAdminError(f"no bootstrap controller answered: {last}")

    async def describe_cluster(self) -> ClusterInfo:
        info: ClusterInfo = await self._retrying(self._describe_cluster_once)
        return info

    async def _describe_quorum_once(self) -> QuorumInfo:
        cluster = await self._describe_cluster_once()
        leader = cluster.controllers.get(cluster.controller_id)
        if leader is None:
            raise RetriableAdminError("no active controller (the quorum has no leader yet)")
        request = DescribeQuorumRequestData(
            topics=[
                DescribeQuorumRequestData.TopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[DescribeQuorumRequestData.PartitionData(partition_index=0)],
                )
            ]
        )
        r = await self._request(leader, ApiKeys.DESCRIBE_QUORUM, DESCRIBE_QUORUM_VERSION, request)
        assert isinstance(r, DescribeQuorumResponseData)
        return quorum_info_of(r)

    async def describe_quorum(self) -> QuorumInfo:
        info: QuorumInfo = await self._retrying(self._describe_quorum_once)
        return info


def quorum_info_of(r: DescribeQuorumResponseData) -> QuorumInfo:
    if r.error_code != 0:
        raise AdminError(f"DescribeQuorum: {Errors(r.error_code).name}: {r.error_message}")
    if len(r.topics) != 1 or r.topics[0].topic_name != METADATA_TOPIC:
        raise AdminError(f"DescribeQuorum: expected one topic {METADATA_TOPIC}")
    parts = r.topics[0].partitions
    if len(parts) != 1 or parts[0].partition_index != 0:
        raise AdminError(f"DescribeQuorum: expected partition 0 of {METADATA_TOPIC}")
    p = parts[0]
    if p.error_code == Errors.NOT_LEADER_OR_FOLLOWER:
        raise RetriableAdminError("DescribeQuorum: NOT_LEADER_OR_FOLLOWER (leader moved)")
    if p.error_code != 0:
        raise AdminError(f"DescribeQuorum: {Errors(p.error_code).name}: {p.error_message}")

    def replica(s: DescribeQuorumResponseData.ReplicaState) -> ReplicaInfo:
        return ReplicaInfo(
            s.replica_id,
            s.replica_directory_id,
            s.log_end_offset,
            s.last_fetch_timestamp,
            s.last_caught_up_timestamp,
        )

    nodes = {
        n.node_id: [_endpoint_str(ls.name, ls.host, ls.port) for ls in n.listeners] for n in r.nodes
    }
    return QuorumInfo(
        p.leader_id,
        p.leader_epoch,
        p.high_watermark,
        [replica(v) for v in p.current_voters],
        [replica(o) for o in p.observers],
        nodes,
    )

"""Outbound Raft requests to the other voters (KIP-595 RPCs over Kafka framing).

Role: one `KafkaConnection` per other voter, at the endpoints of the voter set the core holds
(the start-up set, then each `VotersChanged`: `set_endpoints` opens connections to new voters,
re-points moved ones and closes those of removed ones); `send()` fires a core `SendRequest` at
the highest version both sides speak (ours: Kafka 4.3.1's), and reports the decoded response
(with a Fetch response's raw records) or the failure back to the driver.

Invariants: the core's correlation id travels with the request inside this process only (the
wire carries the connection's own id); a request that fails to connect, loses its connection,
or gets no answer within `controller.quorum.request.timeout.ms` is reported as failed exactly
once; a response is reported at most once. At most one core request is in flight on a
connection (Kafka's raft client: `KafkaRaftManager` max.in.flight = 1): a request the core
abandoned (`abandon`: its timeout, a state change) closes the connection it is in flight on,
and so does a new request to a replica whose previous one is still in flight, so requests and
responses alternate on every connection and a response the core ignores never precedes a
later request on the same one (the leader's read lease relies on that; core/read_lease.py).
With the controller listener on SSL every peer
connection is TLS with this node's certificate (Kafka's raft client uses the controller
listener's ssl.* settings), and a refused handshake is logged once per peer and reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from metaquorum.net.connection import KafkaConnection, TlsError
from metaquorum.net.endpoint import Endpoint
from metaquorum.net.tls import TlsContexts
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import (
    ApiVersionsRequestData,
    FetchRequestData,
    FetchResponseData,
)
from metaquorum.runtime.config import NodeConfig

log = logging.getLogger("metaquorum.peers")


class RequestAbandoned(ConnectionError):
    """A request the core gave up on before it was sent (or replaced by a newer one)."""


OnResponse = Callable[[int, int, Any, bytes | None, int], None]
OnFailure = Callable[[int, int], None]


class PeerPool:
    def __init__(
        self,
        config: NodeConfig,
        endpoints: Mapping[int, Endpoint],
        on_response: OnResponse,
        on_failure: OnFailure,
    ) -> None:
        self.config = config
        self.on_response = on_response
        self.on_failure = on_failure
        self.timeout_s = config.quorum.request_timeout_ms / 1000
        self.connections: dict[int, KafkaConnection] = {}
        self.endpoints: dict[int, Endpoint] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # Voters whose last request could not connect or lost its connection (not a timeout).
        self.unreachable: set[int] = set()
        self.sent = 0
        self.failed = 0
        self.in_flight = 0
        self.tls = TlsContexts.shared(config.tls).client if config.tls is not None else None
        self._tls_reported: dict[int, str] = {}
        # The core's correlation id of the request in flight (or connecting) per replica.
        self._current: dict[int, int] = {}
        self.abandoned = 0
        self.set_endpoints(endpoints)

    def set_endpoints(self, endpoints: Mapping[int, Endpoint]) -> None:
        """Connect to exactly these replicas (this node left out): new ones get a connection
        (opened on first send), moved ones a new connection, removed ones are closed (their
        requests in flight fail, and are reported, as on a lost connection)."""
        wanted = {nid: ep for nid, ep in endpoints.items() if nid != self.config.node_id}
        for nid in list(self.connections):
            if self.endpoints.get(nid) != wanted.get(nid):
                self._spawn(self.connections.pop(nid).close())
                del self.endpoints[nid]
                self.unreachable.discard(nid)
        q = self.config.quorum
        for nid, ep in wanted.items():
            if nid not in self.connections:
                self.endpoints[nid] = ep
                self.connections[nid] = KafkaConnection(
                    ep.host,
                    ep.port,
                    client_id=f"raft-client-{self.config.node_id}",
                    backoff_ms=max(1, q.retry_backoff_ms),
                    backoff_max_ms=max(q.retry_backoff_ms, 1000),
                    connect_timeout_s=self.timeout_s,
                    tls=self.tls,
                )

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def send(
        self, destination: int, cid: int, message: Any, endpoint: Endpoint | None = None
    ) -> None:
        """`endpoint`: where to reach a replica that is not a voter (KIP-853: the voter being
        added); its connection stays until the next `set_endpoints` decides."""
        conn = self.connections.get(destination)
        if conn is None and endpoint is not None and destination != self.config.node_id:
            self.set_endpoints({**self.endpoints, destination: endpoint})
            conn = self.connections.get(destination)
        if conn is None:
            log.warning("no endpoint for replica %s; dropping %s", destination, type(message))
            self.on_failure(destination, cid)
            return
        if destination in self._current:
            self._reset(conn, destination, "a newer request replaced the one in flight")
        self._current[destination] = cid
        if conn.connected:  # the hot path: a callback, no task
            self._send(conn, destination, cid, message)
            return
        task = asyncio.create_task(self._connect_and_send(conn, destination, cid, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def abandon(self, destination: int, cid: int) -> None:
        """The core gave up on request `cid` to `destination`: close the connection it is in
        flight on (it fails, and is reported, as on a lost connection; the core ignores it)."""
        conn = self.connections.get(destination)
        if conn is not None and self._current.get(destination) == cid:
            self._reset(conn, destination, "the request was abandoned")

    def _reset(self, conn: KafkaConnection, destination: int, why: str) -> None:
        self.abandoned += 1
        self._current.pop(destination, None)
        if conn.in_flight:
            conn.reset(RequestAbandoned(f"connection to replica {destination} closed: {why}"))

    async def _connect_and_send(
        self, conn: KafkaConnection, destination: int, cid: int, message: Any
    ) -> None:
        try:
            await conn.connect()
        except (ConnectionError, OSError) as e:
            if self._current.get(destination) == cid:
                del self._current[destination]
            self._failed(destination, cid, e)
            return
        if self._current.get(destination) != cid:  # abandoned or replaced while connecting
            self._failed(destination, cid, RequestAbandoned(f"request to {destination} abandoned"))
            return
        self._send(conn, destination, cid, message)

    def _send(self, conn: KafkaConnection, destination: int, cid: int, message: Any) -> None:
        self.sent += 1
        self.in_flight += 1
        api_key = int(message.API_KEY)
        version = int(message.HIGHEST_SUPPORTED_VERSION)
        fetch_offset = -1
        timeout = self.timeout_s
        if isinstance(message, FetchRequestData):
            fetch_offset = message.topics[0].partitions[0].fetch_offset
            timeout += message.max_wait_ms / 1000

        def done(response: Any, error: BaseException | None) -> None:
            self.in_flight -= 1
            if self._current.get(destination) == cid:
                del self._current[destination]
            if error is not None:
                self._failed(destination, cid, error)
                return
            self.unreachable.discard(destination)
            records = None
            if isinstance(response, FetchResponseData) and response.responses:
                parts = response.responses[0].partitions
                if parts:
                    records = parts[0].records
            self.on_response(destination, cid, response, records, fetch_offset)

        conn.send(api_key, version, message, timeout, done)

    def _failed(self, destination: int, cid: int, error: BaseException) -> None:
        self.failed += 1
        if isinstance(error, ConnectionError | OSError) and not isinstance(
            error, TimeoutError | RequestAbandoned
        ):
            self.unreachable.add(destination)
        if isinstance(error, TlsError) and self._tls_reported.get(destination) != str(error):
            self._tls_reported[destination] = str(error)
            level = logging.WARNING if error.certain else logging.INFO
            log.log(level, "cannot reach voter %s: %s", destination, error)
        log.debug("request to %s failed: %s", destination, error)
        self.on_failure(destination, cid)

    async def probe(self, timeout_s: float) -> None:
        """ApiVersions to every other voter: refresh `unreachable` (a graceful shutdown asks
        whether any voter is left to take over)."""

        async def one(nid: int, conn: KafkaConnection) -> None:
            try:
                await conn.request(
                    int(ApiKeys.API_VERSIONS), 3, ApiVersionsRequestData(), timeout_s
                )
            except TimeoutError:
                return  # alive but slow, or unknown: not unreachable
            except (ConnectionError, ProtocolError, OSError):
                self.unreachable.add(nid)
                return
            self.unreachable.discard(nid)

        await asyncio.gather(*(one(n, c) for n, c in self.connections.items()))

    async def wait_idle(self, timeout_s: float) -> None:
        """Until no request is in flight (or `timeout_s`)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while (self._tasks or self.in_flight) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for conn in self.connections.values():
            await conn.close()

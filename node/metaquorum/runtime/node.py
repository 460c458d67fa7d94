"""A running KRaft controller node: storage + driver + TCP server, and graceful shutdown.

Role: open this node's formatted `metadata.log.dir`, load the log into the core, start the
driver and the Kafka-framed listener, and route each inbound request: ApiVersions and
DescribeCluster are answered here; Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
DescribeQuorum, FetchSnapshot and Add/Remove/UpdateRaftVoter (KIP-853) go through the core;
Produce and a consumer's Fetch go to `ClientApi`; UpdateFeatures (kraft.version) to
runtime/features.py.
SIGTERM/SIGINT: a leader resigns (EndQuorumEpoch) first.

Invariants: a Fetch response carries the leader's stored batches for exactly the entries the
core chose (bytes as on disk, never re-encoded); an API we do not serve closes that connection
(as Kafka does for an API not enabled on a listener); the node never dies on a bad request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Awaitable
from functools import partial
from typing import Any

from metaquorum.core import describe_quorum, discovery
from metaquorum.core.log import LogEntry
from metaquorum.core.states import state_summary
from metaquorum.core.value import replace
from metaquorum.net.tls import TlsContexts
from metaquorum.net.wire import InboundRequest, UnsupportedApiVersions, encode_response
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.errors import Errors, ProtocolError
from metaquorum.protocol.messages import (
    DescribeQuorumResponseData,
    FetchRequestData,
    FetchResponseData,
)
from metaquorum.runtime.apis import api_versions_response, describe_cluster_response
from metaquorum.runtime.client_api import ClientApi
from metaquorum.runtime.config import NodeConfig
from metaquorum.runtime.driver import Driver
from metaquorum.runtime.features import handle_update_features
from metaquorum.runtime.produce import PRODUCE_API_KEY
from metaquorum.runtime.records_bridge import batches_for_entries, clip_batches
from metaquorum.runtime.server import KafkaServer
from metaquorum.runtime.storage_io import load_entries, load_latest_snapshot
from metaquorum.storage.log import LogConfig
from metaquorum.storage.replica import open_replica_storage

log = logging.getLogger("metaquorum.node")

CORE_APIS = frozenset(
    {
        ApiKeys.VOTE,
        ApiKeys.BEGIN_QUORUM_EPOCH,
        ApiKeys.END_QUORUM_EPOCH,
        ApiKeys.FETCH,
        ApiKeys.DESCRIBE_QUORUM,
        ApiKeys.FETCH_SNAPSHOT,
        ApiKeys.ADD_RAFT_VOTER,
        ApiKeys.REMOVE_RAFT_VOTER,
        ApiKeys.UPDATE_RAFT_VOTER,
    }
)
MAX_FETCH_BYTES = 8 * 1024 * 1024
EXIT_STORAGE_FAILURE = 74  # sysexits EX_IOERR: a write, fsync or truncate of the log dir failed


class NodeRuntime:
    def __init__(self, config: NodeConfig, *, fsync: bool = True) -> None:
        self.config = config
        storage = open_replica_storage(
            config.metadata_log_dir,
            node_id=config.node_id,
            config=LogConfig(segment_bytes=config.segment_bytes, fsync=fsync),
            topic=config.raft_topic,
        )
        if storage.meta.cluster_id is None:
            raise ProtocolError(f"{config.metadata_log_dir}/meta.properties has no cluster.id")
        self.cluster_id = storage.meta.cluster_id
        recovery = storage.log.recovery
        if recovery.reasons:
            log.warning("log recovery: %s", "; ".join(recovery.reasons))
        snapshot = load_latest_snapshot(storage)
        self.driver = Driver(config, storage, load_entries(storage), snapshot)
        ep = config.listen
        tls = TlsContexts.shared(config.tls).server() if config.tls is not None else None
        self.server = KafkaServer(
            ep.host, ep.port, self.dispatch, max_frame_bytes=config.max_frame_bytes, tls=tls
        )
        self.stop_requested = asyncio.Event()
        self.client_api = ClientApi(self.driver)

    async def start(self) -> None:
        self.driver.start()
        await self.server.start()
        log.info(
            "node %s listening on %s:%s (%s, cluster %s)",
            self.config.node_id,
            self.config.listen.host,
            self.server.port,
            "PLAINTEXT"
            if self.config.tls is None
            else f"SSL, client auth {self.config.tls.client_auth}",
            self.cluster_id,
        )

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.signalled, sig)

    def signalled(self, sig: signal.Signals) -> None:
        """One line naming the signal and the state it found (a rolled leader's log shows
        whether it had resigned before its pod was stopped), then the graceful shutdown."""
        state = state_summary(self.driver.node.state, self.driver.node.local_id)
        log.info("received %s: shutting down as %s", sig.name, state)
        self.stop_requested.set()

    async def shutdown(self) -> None:
        # The server stays up during the graceful part: the resigned leader must answer its
        # successor's PreVote/Vote (Kafka keeps serving until another leader is known).
        await self.driver.graceful_shutdown()
        await self.server.stop()
        await self.driver.stop()

    # --- request routing ---------------------------------------------------------------------
    def dispatch(
        self, request: InboundRequest | UnsupportedApiVersions, conn_id: int
    ) -> Awaitable[bytes]:
        """The server's handler: Produce and the Raft APIs answer through futures and callbacks
        (no task per request on the hot path); every other API through the `handle` coroutine."""
        if isinstance(request, InboundRequest):
            key = request.api_key
            if key == PRODUCE_API_KEY:
                return self.client_api.produce_nowait(
                    request.message, request.api_version, request.correlation_id
                )
            if key in CORE_APIS and not (key == ApiKeys.FETCH and _is_consumer(request.message)):
                return self._core_request(request, conn_id)
        return self.handle(request, conn_id)

    def _core_request(self, request: InboundRequest, conn_id: int) -> asyncio.Future[bytes]:
        """A Raft request answered from the core's `SendResponse`; a task only when a Fetch's
        records are no longer in the leader's recent batches and must be read from storage.
        `conn_id` (unique in this process) is the request's source for the core: the read
        lease counts a voter's Fetch only after a response on the same connection."""
        key, version, cid = request.api_key, request.api_version, request.correlation_id
        out: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        def answered(message: Any, entries: tuple[LogEntry, ...]) -> None:
            if out.done():
                return  # the connection went away
            try:
                if key == ApiKeys.FETCH and isinstance(message, FetchResponseData):
                    message = discovery.fetch_for_version(message, version)  # NodeEndpoints v16+
                if key == ApiKeys.FETCH and entries and isinstance(message, FetchResponseData):
                    first, end = entries[0].offset, entries[-1].offset + 1
                    cached = self.driver.recent_records(first, end, MAX_FETCH_BYTES)
                    if cached is None:
                        read = asyncio.ensure_future(self._with_records(message, entries))
                        read.add_done_callback(partial(_encode_into, out, key, version, cid))
                        return
                    message = self._set_records(message, cached)
                elif key == ApiKeys.DESCRIBE_QUORUM and isinstance(
                    message, DescribeQuorumResponseData
                ):
                    # Node list and directory ids are v2+ (KIP-853), as Kafka's RaftUtil.
                    message = describe_quorum.for_version(message, version)
                out.set_result(encode_response(key, version, cid, message))
            except Exception as e:  # never into the driver's loop: this request fails alone
                out.set_exception(e)

        self.driver.submit_request_with_callback(request.message, answered, conn_id)
        return out

    async def handle(self, request: InboundRequest | UnsupportedApiVersions, conn_id: int) -> bytes:
        if isinstance(request, UnsupportedApiVersions):
            body = api_versions_response(0, Errors.UNSUPPORTED_VERSION)
            return encode_response(ApiKeys.API_VERSIONS, 0, request.correlation_id, body)
        key, version = request.api_key, request.api_version
        message: Any
        if key == ApiKeys.API_VERSIONS:
            core = self.driver.node
            hw = core.high_watermark
            message = api_versions_response(
                version,
                kraft_version=core.control.latest_kraft_version(),
                features_epoch=-1 if hw is None else hw - 1,
            )
        elif key == ApiKeys.UPDATE_FEATURES:
            message = await handle_update_features(
                self.driver, self.driver.kraft_upgrades, request.message, version
            )
        elif key == ApiKeys.DESCRIBE_CLUSTER:
            message = describe_cluster_response(
                request.message,
                version,
                cluster_id=self.cluster_id,
                leader_id=self.driver.node.leader_id,
                controllers=self.driver.voter_endpoints,
            )
        elif key == ApiKeys.FETCH and _is_consumer(request.message):
            message = await self.client_api.consumer_fetch(request.message)
        else:
            raise ProtocolError(f"api {ApiKeys(key).name} is not served by this node")
        return encode_response(key, version, request.correlation_id, message)

    async def _with_records(
        self, message: FetchResponseData, entries: tuple[LogEntry, ...]
    ) -> FetchResponseData:
        first, end = entries[0].offset, entries[-1].offset + 1
        cached = self.driver.recent_records(first, end, MAX_FETCH_BYTES)
        if cached is not None:
            return self._set_records(message, cached)
        storage = self.driver.io.storage

        def read() -> bytes:
            try:
                data = storage.log.read(first, MAX_FETCH_BYTES).records
            except ProtocolError:
                return b""
            return clip_batches(data, first, end)

        records = await self.driver.io.call(read)
        if not records:
            # Not batch-aligned (should not happen): encode the entries themselves.
            records = b"".join(batches_for_entries(entries, timestamp_ms=0))
        return self._set_records(message, records)

    @staticmethod
    def _set_records(message: FetchResponseData, records: bytes) -> FetchResponseData:
        topic = message.responses[0]
        part = replace(topic.partitions[0], records=records)
        topic = replace(topic, partitions=[part])
        return replace(message, responses=[topic])


def _encode_into(
    out: asyncio.Future[bytes],
    key: int,
    version: int,
    cid: int,
    answer: asyncio.Future[FetchResponseData],
) -> None:
    if out.done():
        return
    if answer.cancelled():
        out.cancel()
    elif (exc := answer.exception()) is not None:
        out.set_exception(exc)
    else:
        out.set_result(encode_response(key, version, cid, answer.result()))


def _is_consumer(message: FetchRequestData) -> bool:
    """A Fetch from a consumer (not a replica): ReplicaId < 0 in both places."""
    return message.replica_state.replica_id < 0 and message.replica_id < 0


async def serve(runtime: NodeRuntime) -> int:
    """Run until SIGTERM/SIGINT (or a driver failure); 0 on a clean stop, 1 after a driver
    failure, `EXIT_STORAGE_FAILURE` after a storage failure (fail-stop, no graceful hand-over)."""
    runtime.install_signal_handlers()
    await runtime.start()
    # The start-up objects (modules, classes, functions, configs) move to CPython's permanent
    # generation, so a full collection walks only what the running node allocates: ~55k of
    # them made every full collection 18-37 ms (every ~5 s at 20,000 records/s; round 14).
    gc.collect()
    gc.freeze()
    driver_task = runtime.driver._task
    stop = asyncio.create_task(runtime.stop_requested.wait())
    waiters: list[asyncio.Future[Any]] = [stop]
    if driver_task is not None:
        waiters.append(driver_task)
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    with contextlib.suppress(BaseException):
        await stop
    failure = runtime.driver.failure
    if runtime.driver.io.failed is not None:
        # Fail-stop: no hand-over, no further answer; the driver logged the one-line cause.
        await runtime.server.stop()
        await runtime.driver.stop()
        return EXIT_STORAGE_FAILURE
    await runtime.shutdown()
    if failure is not None:
        log.error("node stopped after a failure: %s", failure)
        return 1
    return 0

"""The Kafka-framed server and client in one process: in-order responses per connection,
bad frames close only their connection, client timeouts and reconnect backoff."""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest
from metaquorum.net.connection import KafkaConnection
from metaquorum.net.wire import InboundRequest, UnsupportedApiVersions, encode_response
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.messages import ApiVersionsRequestData, ApiVersionsResponseData
from metaquorum.runtime.apis import api_versions_response
from metaquorum.runtime.server import KafkaServer


async def _start(delays: dict[int, float] | None = None, **kw: float) -> KafkaServer:
    async def handler(req: InboundRequest | UnsupportedApiVersions, conn: int) -> bytes:
        if isinstance(req, UnsupportedApiVersions):
            return encode_response(18, 0, req.correlation_id, api_versions_response(0))
        await asyncio.sleep((delays or {}).get(req.correlation_id, 0))
        return encode_response(18, req.api_version, req.correlation_id, api_versions_response(3))

    server = KafkaServer("127.0.0.1", 0, handler, max_frame_bytes=1024, **kw)  # type: ignore[arg-type]
    await server.start()
    return server


async def _raw_request(writer: asyncio.StreamWriter, cid: int) -> None:
    from metaquorum.net.wire import encode_request

    writer.write(encode_request(18, 3, cid, ApiVersionsRequestData(), "t"))
    await writer.drain()


async def _read_cid(reader: asyncio.StreamReader) -> int:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    payload = await reader.readexactly(size)
    return int(struct.unpack_from(">i", payload)[0])


async def test_responses_leave_in_request_order() -> None:
    server = await _start({1: 0.3, 2: 0.0, 3: 0.1})
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        for cid in (1, 2, 3):
            await _raw_request(writer, cid)
        got = [await asyncio.wait_for(_read_cid(reader), 5) for _ in range(3)]
        assert got == [1, 2, 3]
        writer.close()
    finally:
        await server.stop()


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", -1),
        struct.pack(">i", 4096),  # above max_frame_bytes=1024
        struct.pack(">ihhi", 8, 999, 0, 1),  # unknown api key
        struct.pack(">ihhi", 8, 52, 99, 1),  # unsupported Vote version
    ],
)
async def test_bad_frame_closes_only_that_connection(garbage: bytes) -> None:
    server = await _start()
    try:
        good = KafkaConnection("127.0.0.1", server.port)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(garbage)
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
        r = await good.request(ApiKeys.API_VERSIONS, 3, ApiVersionsRequestData(), 5)
        assert isinstance(r, ApiVersionsResponseData) and r.error_code == 0
        assert server.closed_bad_frames == 1
        await good.close()
    finally:
        await server.stop()


async def test_slow_loris_frame_is_cut() -> None:
    server = await _start(frame_timeout_s=0.3)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(struct.pack(">i", 100) + b"\x00\x12")  # never completes
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 5) == b""
    finally:
        await server.stop()


async def test_client_times_out_and_backs_off_after_failed_connect() -> None:
    server = await _start({1: 2.0})
    try:
        conn = KafkaConnection("127.0.0.1", server.port)
        with pytest.raises(TimeoutError):
            await conn.request(ApiKeys.API_VERSIONS, 3, ApiVersionsRequestData(), 0.2)
        await conn.close()
    finally:
        await server.stop()
    dead = KafkaConnection("127.0.0.1", server.port, backoff_ms=500)
    with pytest.raises(ConnectionError, match="cannot connect"):
        await dead.request(ApiKeys.API_VERSIONS, 3, ApiVersionsRequestData(), 1)
    with pytest.raises(ConnectionError, match="backing off"):
        await dead.request(ApiKeys.API_VERSIONS, 3, ApiVersionsRequestData(), 1)


async def _fake_broker(reply: bytes) -> tuple[asyncio.Server, int]:
    """A server that reads one request frame and answers `reply` verbatim."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        await reader.readexactly(size)
        writer.write(reply)
        await writer.drain()
        await asyncio.sleep(5)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_client_bad_response_frame_fails_pending_requests_and_reconnects() -> None:
    broker, port = await _fake_broker(struct.pack(">i", 2))  # size below a response header
    try:
        conn = KafkaConnection("127.0.0.1", port)
        with pytest.raises(ConnectionError, match="frame size 2 outside"):
            await conn.request(ApiKeys.API_VERSIONS, 3, ApiVersionsRequestData(), 5)
        await asyncio.sleep(0.05)
        assert not conn.connected  # the connection was dropped; the next request reconnects
        await conn.close()
    finally:
        broker.close()


async def test_client_send_callbacks_exactly_once_and_drops_late_responses() -> None:
    server = await _start({1: 0.3, 2: 0.0})
    try:
        conn = KafkaConnection("127.0.0.1", server.port)
        got: list[tuple[object, BaseException | None]] = []
        conn.send(18, 3, ApiVersionsRequestData(), 1, lambda r, e: got.append((r, e)))
        assert len(got) == 1 and isinstance(got[0][1], ConnectionError)  # not connected yet
        await conn.connect()
        slow: list[tuple[object, BaseException | None]] = []
        conn.send(18, 3, ApiVersionsRequestData(), 0.1, lambda r, e: slow.append((r, e)))
        await asyncio.sleep(0.6)  # its answer arrives after the timeout: dropped
        assert len(slow) == 1 and isinstance(slow[0][1], TimeoutError)
        r = await conn.request(ApiKeys.API_VERSIONS, 3, ApiVersionsRequestData(), 5)
        assert isinstance(r, ApiVersionsResponseData) and r.error_code == 0
        await conn.close()
    finally:
        await server.stop()


async def test_a_request_refused_by_stopped_storage_closes_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """After a storage failure the node says so in one line and stops; requests still in
    flight are refused by the stopped storage and close their connection quietly (the nemesis
    saw a full traceback after the ENOSPC line)."""
    from metaquorum.runtime.storage_io import StorageStoppedError

    caplog.set_level(logging.INFO)

    async def handler(req: InboundRequest | UnsupportedApiVersions, conn: int) -> bytes:
        raise StorageStoppedError("storage stopped after: write of x failed: ENOSPC")

    server = KafkaServer("127.0.0.1", 0, handler, max_frame_bytes=1024)  # type: ignore[arg-type]
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        await _raw_request(writer, 1)
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed
        writer.close()
    finally:
        await server.stop()
    assert not [r for r in caplog.records if r.exc_info], caplog.text
    assert "ENOSPC" in caplog.text


async def test_a_request_timeout_drops_the_connection_and_the_next_request_reconnects() -> None:
    """Kafka's NetworkClient disconnects on a request timeout. A peer that went silent without
    closing (a half-open connection: its host gone, no FIN or RST) must not keep every later
    request: the next one connects again (here to a server that answers)."""
    connections: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        silent = len(connections) == 1  # the first connection swallows everything
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                payload = await reader.readexactly(size)
                if silent:
                    continue
                cid = struct.unpack_from(">i", payload, 4)[0]  # after api key and version
                writer.write(encode_response(18, 3, cid, api_versions_response(3)))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        conn = KafkaConnection("127.0.0.1", port)
        await conn.connect()
        other: list[tuple[object, BaseException | None]] = []
        conn.send(18, 3, ApiVersionsRequestData(), 5, lambda r, e: other.append((r, e)))
        with pytest.raises(TimeoutError):
            await conn.request(ApiKeys.API_VERSIONS, 3, ApiVersionsRequestData(), 0.2)
        # the other request on the silent connection failed with it, not 5 s later
        assert len(other) == 1 and isinstance(other[0][1], ConnectionError)
        assert "timed out" in str(other[0][1])
        r = await conn.request(ApiKeys.API_VERSIONS, 3, ApiVersionsRequestData(), 2)
        assert isinstance(r, ApiVersionsResponseData) and r.error_code == 0
        assert len(connections) == 2
        await conn.close()
    finally:
        server.close()

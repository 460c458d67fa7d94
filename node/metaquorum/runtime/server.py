"""Kafka-framed TCP server (reference §2.1; Kafka's SocketServer/Processor behaviour).

Role: accept connections, read size-prefixed frames, decode each request, hand it to the
node's `RequestHandler`, and write the responses back **in request order per connection**.

Invariants:
- a malformed frame (negative size, size above `max_frame_bytes`, undecodable header or body,
  unknown api key, unsupported version other than ApiVersions) closes THAT connection only;
- a frame that has started must complete within `frame_timeout_s` (slow-loris), else the
  connection is closed; an idle connection between frames is kept for `idle_timeout_s`;
- a handler exception closes the connection and is logged; the server keeps serving;
- responses leave in the order their requests arrived, even when a later one is ready first
  (a parked Fetch long-poll delays the responses queued behind it, as in Kafka).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from metaquorum.protocol.errors import ProtocolError
from metaquorum.runtime.wire import SIZE, InboundRequest, UnsupportedApiVersions, decode_request

log = logging.getLogger("metaquorum.server")

# The handler returns the complete response frame bytes (or None: no response, e.g. acks=0).
RequestHandler = Callable[[InboundRequest | UnsupportedApiVersions, int], Awaitable[bytes | None]]


class KafkaServer:
    def __init__(
        self,
        host: str,
        port: int,
        handler: RequestHandler,
        *,
        max_frame_bytes: int = 100 * 1024 * 1024,
        frame_timeout_s: float = 10.0,
        idle_timeout_s: float = 600.0,
    ) -> None:
        self.host = host
        self.port = port
        self.handler = handler
        self.max_frame_bytes = max_frame_bytes
        self.frame_timeout_s = frame_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._next_conn = 0
        self.closed_bad_frames = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, reuse_address=True
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(BaseException):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self._next_conn += 1
        conn_id = self._next_conn
        queue: asyncio.Queue[asyncio.Future[bytes | None] | None] = asyncio.Queue()
        sender = asyncio.create_task(self._send_in_order(queue, writer))
        try:
            await self._read_frames(reader, queue, conn_id)
        except (ProtocolError, asyncio.IncompleteReadError, ConnectionError, TimeoutError) as e:
            if isinstance(e, ProtocolError | TimeoutError):
                self.closed_bad_frames += 1
                log.info("closing connection %s: %s", conn_id, e or "frame timeout")
        except asyncio.CancelledError:
            pass
        finally:
            sender.cancel()
            with contextlib.suppress(BaseException):
                await sender
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1)
            self._connections.discard(task)

    async def _read_frames(
        self,
        reader: asyncio.StreamReader,
        queue: asyncio.Queue[asyncio.Future[bytes | None] | None],
        conn_id: int,
    ) -> None:
        while True:
            try:
                # asyncio.timeout arms a timer handle; wait_for would create a task per frame.
                async with asyncio.timeout(self.idle_timeout_s):
                    first = await reader.readexactly(1)
            except asyncio.IncompleteReadError:
                return  # clean close between frames
            async with asyncio.timeout(self.frame_timeout_s):
                rest = await reader.readexactly(SIZE.size - 1)
                (size,) = SIZE.unpack(first + rest)
                if size < 0 or size > self.max_frame_bytes:
                    raise ProtocolError(f"frame size {size} outside [0, {self.max_frame_bytes}]")
                payload = await reader.readexactly(size)
            request = decode_request(payload)
            queue.put_nowait(asyncio.ensure_future(self.handler(request, conn_id)))

    async def _send_in_order(
        self,
        queue: asyncio.Queue[asyncio.Future[bytes | None] | None],
        writer: asyncio.StreamWriter,
    ) -> None:
        pending: list[asyncio.Future[Any]] = []
        try:
            while True:
                fut = await queue.get()
                if fut is None:
                    return
                pending.append(fut)
                data = await fut
                pending.remove(fut)
                if data is not None:
                    writer.write(data)
                    await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("request handler failed; closing the connection")
            writer.close()
        finally:
            for fut in pending:
                fut.cancel()
            while not queue.empty():
                item = queue.get_nowait()
                if item is not None:
                    item.cancel()

"""Kafka-framed TCP server (reference §2.1; Kafka's SocketServer/Processor behaviour).

Role: accept connections, read size-prefixed frames, decode each request, hand it to the
node's `RequestHandler`, and write the responses back **in request order per connection**.
Built on `asyncio.Protocol` callbacks, not streams: a frame is cut out of the bytes as they
arrive and dispatched at once, and the responses that are ready at the head of a connection's
queue leave in one `writelines` call, with no reader or writer task per connection and no
timer armed per frame.

Invariants:
- a malformed frame (negative size, size above `max_frame_bytes`, undecodable header or body,
  unknown api key, unsupported version other than ApiVersions) closes THAT connection only;
- a frame that has started must complete within `frame_timeout_s` (slow-loris), else the
  connection is closed; an idle connection between frames is kept for `idle_timeout_s`;
- a handler exception closes the connection and is logged; the server keeps serving;
- responses leave in the order their requests arrived, even when a later one is ready first
  (a parked Fetch long-poll delays the responses queued behind it, as in Kafka);
- back-pressure: reading pauses while the socket's write buffer is full or more than
  `MAX_PIPELINED` requests of the connection are unanswered;
- with `tls` (the listener's protocol is SSL) no byte reaches the frame parser before the TLS
  handshake completed (a refused handshake is logged by net/tls.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, cast

from metaquorum.net.wire import (
    FrameReader,
    InboundRequest,
    UnsupportedApiVersions,
    decode_request,
)
from metaquorum.protocol.errors import ProtocolError
from metaquorum.runtime.storage_io import StorageStoppedError

log = logging.getLogger("metaquorum.server")

# The handler returns the complete response frame bytes (or None: no response, e.g. acks=0).
RequestHandler = Callable[[InboundRequest | UnsupportedApiVersions, int], Awaitable[bytes | None]]

MAX_PIPELINED = 1024  # unanswered requests per connection before reading pauses
LISTEN_BACKLOG = 4096  # the default 100 overflows when a thousand clients connect at once


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
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.handler = handler
        self.max_frame_bytes = max_frame_bytes
        self.frame_timeout_s = frame_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._next_conn = 0
        self.closed_bad_frames = 0
        self.tls = tls

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self),
            self.host,
            self.port,
            reuse_address=True,
            backlog=LISTEN_BACKLOG,
            ssl=self.tls,
            ssl_handshake_timeout=self.frame_timeout_s if self.tls is not None else None,
        )
        # uvloop's `sockets` is a list (typeshed: a tuple); Any keeps a compiled build from checking
        sock = cast(Any, self._server).sockets[0]
        self.port = sock.getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            conn.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)


class _Connection(asyncio.Protocol):
    """One client connection: frame parsing, dispatch, in-order replies, timers."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.conn_id = 0
        self.pending: deque[asyncio.Future[bytes | None]] = deque()
        self.frames = FrameReader(server.max_frame_bytes)
        self.frame_timer: asyncio.TimerHandle | None = None
        self.idle_timer: asyncio.TimerHandle | None = None
        self.last_activity = 0.0
        self.write_paused = False
        self.pipeline_paused = False
        self.closed = False

    # --- asyncio.Protocol --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.server._next_conn += 1
        self.conn_id = self.server._next_conn
        self.server._connections.add(self)
        self.last_activity = self.loop.time()
        self.idle_timer = self.loop.call_later(self.server.idle_timeout_s, self._check_idle)

    def data_received(self, data: bytes) -> None:
        self.last_activity = self.loop.time()
        try:
            frames = self.frames.feed(data)
            for payload in frames:
                self._dispatch(decode_request(payload))
                if self.closed:
                    return
        except ProtocolError as e:
            self.server.closed_bad_frames += 1
            log.info("closing connection %s: %s", self.conn_id, e)
            self.close()
            return
        except Exception:  # a bug, not bad bytes: this connection only
            log.exception("closing connection %s after an internal error", self.conn_id)
            self.close()
            return
        # A started frame must complete within frame_timeout_s (from when it started, or from
        # the last frame completed before it).
        if self.frames.partial:
            if frames or self.frame_timer is None:
                self._arm_frame_timer()
        elif self.frame_timer is not None:
            self.frame_timer.cancel()
            self.frame_timer = None

    def eof_received(self) -> bool:
        return False  # a half-closed client is done: close, as Kafka does

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for timer in (self.frame_timer, self.idle_timer):
            if timer is not None:
                timer.cancel()
        while self.pending:
            self.pending.popleft().cancel()
        self.server._connections.discard(self)

    def pause_writing(self) -> None:
        self.write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        self._update_reading()

    # --- frames ------------------------------------------------------------------------------
    def _arm_frame_timer(self) -> None:
        if self.frame_timer is not None:
            self.frame_timer.cancel()
        self.frame_timer = self.loop.call_later(self.server.frame_timeout_s, self._frame_late)

    def _frame_late(self) -> None:
        self.frame_timer = None
        if self.frames.partial and not self.closed:
            self.server.closed_bad_frames += 1
            log.info("closing connection %s: frame timeout", self.conn_id)
            self.close()

    def _check_idle(self) -> None:
        idle = self.server.idle_timeout_s
        quiet = self.loop.time() - self.last_activity
        if self.closed:
            return
        if quiet >= idle and not self.pending:
            log.info("closing idle connection %s", self.conn_id)
            self.close()
            return
        self.idle_timer = self.loop.call_later(max(idle - quiet, 0.01), self._check_idle)

    # --- requests and in-order responses -----------------------------------------------------
    def _dispatch(self, request: InboundRequest | UnsupportedApiVersions) -> None:
        fut = asyncio.ensure_future(self.server.handler(request, self.conn_id))
        self.pending.append(fut)
        fut.add_done_callback(self._on_done)
        if len(self.pending) >= MAX_PIPELINED and not self.pipeline_paused:
            self.pipeline_paused = True
            self._update_reading()

    def _on_done(self, _: asyncio.Future[bytes | None]) -> None:
        pending = self.pending
        if self.closed or not pending or not pending[0].done():
            return
        out: list[bytes] = []
        while pending and pending[0].done():
            fut = pending.popleft()
            if fut.cancelled():
                continue
            exc = fut.exception()
            if isinstance(exc, StorageStoppedError):  # the node is stopping: said once already
                log.info("closing connection %s: %s", self.conn_id, exc)
                self.close()
                return
            if exc is not None:
                log.error(
                    "request handler failed; closing connection %s",
                    self.conn_id,
                    exc_info=exc,
                )
                self.close()
                return
            data = fut.result()
            if data is not None:
                out.append(data)
        if out and self.transport is not None:
            self.transport.writelines(out)
        if self.pipeline_paused and len(pending) < MAX_PIPELINED // 2:
            self.pipeline_paused = False
            self._update_reading()

    def _update_reading(self) -> None:
        if self.transport is None or self.closed:
            return
        if self.write_paused or self.pipeline_paused:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        while self.pending:
            self.pending.popleft().cancel()
        if self.transport is not None:
            self.transport.close()

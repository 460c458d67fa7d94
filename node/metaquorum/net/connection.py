"""Kafka-framed TCP client: correlation ids, timeouts, reconnect backoff (reference §2.1).

Role: one `KafkaConnection` per remote endpoint, shared by the node's outbound Raft requests and
by the admin client. `request()` encodes a request with the right header version, sends it, and
resolves with the decoded response whose correlation id matches; `send()` does the same with a
callback instead of a coroutine (the node's replication hot path: no task per request). Built
on an `asyncio.Protocol`: responses are cut from the bytes as they arrive, no reader task.

Invariants:
- correlation ids are unique per connection (int32, wrapping) and a response is matched only to
  the request that carried its id; a response to a forgotten id is dropped;
- a request that gets no response within its timeout fails with `TimeoutError`, and the
  connection is dropped (the other requests on it fail with `ConnectionError`; the next one
  connects again), as Kafka's `NetworkClient` disconnects on a request timeout: a peer whose
  host vanished without a FIN or RST (a pod's IP gone, a node powered off) leaves a half-open
  connection that TCP would keep retransmitting into for ~15 minutes, and a name that now
  resolves elsewhere (the pod recreated) is looked up again on reconnect;
- after a failed connect the next attempt waits `backoff_ms`, doubling up to `backoff_max_ms`,
  and resets on success; every pending request fails with `ConnectionError` when the
  connection drops or a response frame is malformed;
- a callback or future is completed exactly once;
- with `tls` every connection is TLS with the context `tls()` returns at connect time (the
  host name as given, not the resolved address, is the one verified); a failed handshake
  raises `TlsError` naming the reason (a `ConnectionError`, with the same backoff).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from metaquorum.net.tls import handshake_reason
from metaquorum.net.wire import SIZE, FrameReader, decode_response, encode_request
from metaquorum.protocol.errors import ProtocolError

# The outcome of one request: the decoded response, or the exception it failed with.
OnResponse = Callable[[Any, BaseException | None], None]


class TlsError(ConnectionError):
    """A TLS handshake with the remote end failed (its reason in one phrase). `certain` is
    False when it is inferred: a TLS 1.3 server closing a new connection before any answer
    (how a refused client certificate looks from here, and also a server dying just then)."""

    def __init__(self, message: str, *, certain: bool = True) -> None:
        super().__init__(message)
        self.certain = certain


class _Pending:
    __slots__ = ("api_key", "callback", "timer", "version")

    def __init__(
        self, api_key: int, version: int, callback: OnResponse, timer: asyncio.TimerHandle | None
    ) -> None:
        self.api_key = api_key
        self.version = version
        self.callback = callback
        self.timer = timer


class _ResponseReader(asyncio.Protocol):
    """Frames in, one `KafkaConnection._on_frame` per response."""

    def __init__(self, conn: KafkaConnection) -> None:
        self.conn = conn
        self.frames = FrameReader(conn.max_frame_bytes, min_size=4)  # at least a correlation id
        self.answered = False  # any byte from the server on this connection yet

    def data_received(self, data: bytes) -> None:
        self.answered = True
        try:
            frames = self.frames.feed(data)
        except ProtocolError as e:
            self.conn._drop(self, ConnectionError(f"bad response frame: {e}"))
            return
        for payload in frames:
            self.conn._on_frame(payload)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn._lost(self, exc)


class KafkaConnection:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "metaquorum",
        backoff_ms: int = 50,
        backoff_max_ms: int = 1000,
        max_frame_bytes: int = 100 * 1024 * 1024,
        connect_timeout_s: float = 2.0,
        tls: Callable[[], ssl.SSLContext] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self.max_frame_bytes = max_frame_bytes
        self.connect_timeout_s = connect_timeout_s
        self.tls = tls
        self._transport: asyncio.Transport | None = None
        self._protocol: _ResponseReader | None = None
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._connect_lock = asyncio.Lock()
        self._failures = 0
        self._not_before = 0.0

    @property
    def connected(self) -> bool:
        return self._is_connected()

    def _is_connected(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def _correlation_id(self) -> int:
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        return self._next_id

    async def connect(self) -> None:
        """Connect unless connected; `ConnectionError` (and a longer backoff) on failure."""
        if self.connected:
            return
        async with self._connect_lock:
            if self._is_connected():  # another caller connected while we waited
                return
            wait = self._not_before - time.monotonic()
            if wait > 0:
                raise ConnectionError(f"{self.host}:{self.port}: backing off {wait * 1000:.0f} ms")
            try:
                transport, protocol = await asyncio.wait_for(self._open(), self.connect_timeout_s)
            except (OSError, TimeoutError) as e:
                self._failures += 1
                delay = min(self.backoff_max_ms, self.backoff_ms * 2 ** (self._failures - 1))
                self._not_before = time.monotonic() + delay / 1000
                if isinstance(e, ssl.SSLError):
                    raise TlsError(
                        f"TLS handshake with {self.host}:{self.port} failed: {handshake_reason(e)}"
                    ) from None
                raise ConnectionError(f"cannot connect to {self.host}:{self.port}: {e}") from None
            self._failures = 0
            self._transport = transport
            self._protocol = protocol

    async def _open(self) -> tuple[asyncio.Transport, _ResponseReader]:
        """Resolve with `socket.getaddrinfo` (as asyncio's own loop does; uvloop would resolve
        inside libuv, past any resolver the process configured), then connect to the first
        address that answers."""
        loop = asyncio.get_running_loop()
        infos = await asyncio.to_thread(
            socket.getaddrinfo, self.host, self.port, 0, socket.SOCK_STREAM
        )
        error: OSError = OSError(f"no address for {self.host}")
        tls = self.tls() if self.tls is not None else None
        for family, _, _, _, address in infos:
            try:
                if tls is None:
                    return await loop.create_connection(
                        lambda: _ResponseReader(self), str(address[0]), self.port, family=family
                    )
                return await loop.create_connection(
                    lambda: _ResponseReader(self),
                    str(address[0]),
                    self.port,
                    family=family,
                    ssl=tls,
                    server_hostname=self.host,
                    ssl_handshake_timeout=self.connect_timeout_s,
                )
            except ssl.SSLError:
                raise  # the server answered: another address would not change its certificate
            except OSError as e:
                error = e
        raise error

    def send(
        self,
        api_key: int,
        api_version: int,
        message: Any,
        timeout_s: float,
        callback: OnResponse,
    ) -> None:
        """Send on the open connection; `callback(response, None)` or `callback(None, error)`
        exactly once (also when not connected: `ConnectionError` at once)."""
        transport = self._transport
        if transport is None or transport.is_closing():
            callback(None, ConnectionError(f"not connected to {self.host}:{self.port}"))
            return
        cid = self._correlation_id()
        timer = asyncio.get_running_loop().call_later(timeout_s, self._time_out, cid)
        self._pending[cid] = _Pending(api_key, api_version, callback, timer)
        transport.write(encode_request(api_key, api_version, cid, message, self.client_id))

    async def request(self, api_key: int, api_version: int, message: Any, timeout_s: float) -> Any:
        await self.connect()
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def settle(response: Any, error: BaseException | None) -> None:
            if fut.done():
                return
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(response)

        self.send(api_key, api_version, message, timeout_s, settle)
        return await fut

    # --- the protocol's callbacks ------------------------------------------------------------
    def _complete(self, cid: int, response: Any, error: BaseException | None) -> None:
        entry = self._pending.pop(cid, None)
        if entry is None:
            return  # a response to a request that already timed out
        if entry.timer is not None:
            entry.timer.cancel()
        entry.callback(response, error)

    def _time_out(self, cid: int) -> None:
        self._complete(cid, None, TimeoutError(f"no response from {self.host}:{self.port}"))
        protocol = self._protocol
        if protocol is not None:  # Kafka's NetworkClient: a request timeout disconnects
            self._drop(
                protocol,
                ConnectionError(
                    f"disconnected from {self.host}:{self.port}: another request timed out"
                ),
            )

    def _on_frame(self, payload: bytes) -> None:
        (cid,) = SIZE.unpack_from(payload)
        entry = self._pending.get(cid)
        if entry is None:
            return
        try:
            response = decode_response(entry.api_key, entry.version, payload)[1]
        except Exception as e:
            self._complete(cid, None, e)
        else:
            self._complete(cid, response, None)

    def _drop(self, protocol: _ResponseReader, error: BaseException) -> None:
        if protocol is self._protocol and self._transport is not None:
            self._fail_all(error)
            self._transport.abort()

    def _lost(self, protocol: _ResponseReader, exc: Exception | None) -> None:
        if protocol is not self._protocol:
            return
        self._transport = None
        self._protocol = None
        if isinstance(exc, ssl.SSLError):
            self._fail_all(
                TlsError(
                    f"TLS connection to {self.host}:{self.port} refused: {handshake_reason(exc)}"
                )
            )
            return
        if self.tls is not None and not protocol.answered and self._pending:
            # TLS 1.3: the server checks our certificate after our side of the handshake is
            # done; its refusal reaches asyncio and uvloop as a plain close.
            self._fail_all(
                TlsError(
                    f"TLS connection to {self.host}:{self.port} closed by the server before any "
                    "answer: it refused our client certificate? (check ssl.keystore.* here and "
                    "ssl.truststore.* there)",
                    certain=False,
                )
            )
            return
        detail = f" lost: {exc}" if exc is not None else " closed"
        self._fail_all(ConnectionError(f"connection to {self.host}:{self.port}{detail}"))

    def _fail_all(self, error: BaseException) -> None:
        for cid in list(self._pending):
            self._complete(cid, None, error)

    @property
    def in_flight(self) -> int:
        """Requests sent on the current connection and not yet answered or failed."""
        return len(self._pending)

    def reset(self, error: ConnectionError) -> None:
        """Drop the current connection now: its requests fail with `error` and the next
        `connect` opens a new one (no backoff: nothing failed to connect)."""
        protocol = self._protocol
        if protocol is not None and self._transport is not None:
            self._drop(protocol, error)
        else:
            self._fail_all(error)

    async def close(self) -> None:
        transport = self._transport
        self._transport = None
        self._protocol = None
        self._fail_all(ConnectionError(f"connection to {self.host}:{self.port} closed"))
        if transport is not None:
            transport.close()

"""Kafka-framed TCP client: correlation ids, timeouts, reconnect backoff (reference §2.1).

Role: one `KafkaConnection` per remote endpoint, shared by the node's outbound Raft requests and
by the admin client. `request()` encodes a request with the right header version, sends it, and
resolves with the decoded response whose correlation id matches.

Invariants:
- correlation ids are unique per connection (int32, wrapping) and a response is matched only to
  the request that carried its id; a response with an unknown id closes the connection;
- a request that gets no response within its timeout raises `TimeoutError` and its id is
  forgotten (a late response is dropped);
- after a failed connect the next attempt waits `backoff_ms`, doubling up to `backoff_max_ms`,
  and resets on success; every pending request fails with `ConnectionError` when the
  connection drops.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from metaquorum.runtime.wire import SIZE, decode_response, encode_request


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
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self.max_frame_bytes = max_frame_bytes
        self.connect_timeout_s = connect_timeout_s
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._pending: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self._next_id = 0
        self._connect_lock = asyncio.Lock()
        self._failures = 0
        self._not_before = 0.0

    def _correlation_id(self) -> int:
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        return self._next_id

    async def _connect(self) -> asyncio.StreamWriter:
        async with self._connect_lock:
            if self._writer is not None and not self._writer.is_closing():
                return self._writer
            wait = self._not_before - time.monotonic()
            if wait > 0:
                raise ConnectionError(f"{self.host}:{self.port}: backing off {wait * 1000:.0f} ms")
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), self.connect_timeout_s
                )
            except (OSError, TimeoutError) as e:
                self._failures += 1
                delay = min(self.backoff_max_ms, self.backoff_ms * 2 ** (self._failures - 1))
                self._not_before = time.monotonic() + delay / 1000
                raise ConnectionError(f"cannot connect to {self.host}:{self.port}: {e}") from None
            self._failures = 0
            self._writer = writer
            self._reader_task = asyncio.create_task(self._read_responses(reader, writer))
            return writer

    async def _read_responses(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        error: BaseException = ConnectionError(f"connection to {self.host}:{self.port} closed")
        try:
            while True:
                (size,) = SIZE.unpack(await reader.readexactly(SIZE.size))
                if size < 4 or size > self.max_frame_bytes:
                    raise ConnectionError(f"bad response frame size {size}")
                payload = await reader.readexactly(size)
                (cid,) = SIZE.unpack_from(payload)
                entry = self._pending.pop(cid, None)
                if entry is None:
                    continue  # a response to a request that already timed out
                api_key, version, fut = entry
                if fut.done():
                    continue
                try:
                    fut.set_result(decode_response(api_key, version, payload)[1])
                except Exception as e:
                    fut.set_exception(e)
        except (asyncio.IncompleteReadError, OSError) as e:
            error = ConnectionError(f"connection to {self.host}:{self.port} lost: {e}")
        except asyncio.CancelledError:
            pass
        finally:
            if self._writer is writer:
                self._writer = None
            writer.close()
            for _, _, fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(error)
            self._pending.clear()

    async def request(self, api_key: int, api_version: int, message: Any, timeout_s: float) -> Any:
        writer = await self._connect()
        cid = self._correlation_id()
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[cid] = (api_key, api_version, fut)
        try:
            writer.write(encode_request(api_key, api_version, cid, message, self.client_id))
            async with asyncio.timeout(timeout_s):  # cheaper than wait_for (no extra waiter)
                return await fut
        finally:
            self._pending.pop(cid, None)

    async def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(BaseException):
                await self._reader_task
        if self._writer is not None:
            self._writer.close()
            self._writer = None

"""The soak's offered load: appends at a fixed rate (open loop), commit latency per window.

Role: on a thread of its own, an asyncio loop sends one Produce (acks=-1, one record) every
1/rate s on a schedule fixed in advance, whether or not earlier appends were answered (open
loop: a slow quorum does not slow the offered load down, so no coordinated omission). Each
append's latency is measured from its *scheduled* send time to its acknowledgement, retries
through a leader change included (LogClient, 10 s). Record `k<seq % keys>=s<seq>`: the key-value
state machine is exercised and its state stays bounded (so snapshots do not grow with time).

Invariants: at most `max_in_flight` appends are outstanding; an append due while that many are
pending is counted as `shed`, never queued (so the harness's own memory stays bounded, and the
report says how much load was not offered); `take_window()` hands each completed append's
latency to exactly one window.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from metaquorum.admin.client import AdminError
from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import Endpoint


@dataclass
class Window:
    """What completed since the previous window."""

    acked: int
    failed: int
    shed: int
    latencies_ms: list[float]


@dataclass
class OpenLoopLoad:
    endpoints: Callable[[], list[Endpoint]]
    rate: float = 100.0
    tls: Callable[[], ssl.SSLContext] | None = None
    keys: int = 512
    max_in_flight: int = 1000
    retry_s: float = 10.0
    acked_total: int = 0
    failed_total: int = 0
    shed_total: int = 0
    last_errors: list[str] = field(default_factory=list)
    _latencies: list[float] = field(default_factory=list)
    _acked: int = 0
    _failed: int = 0
    _shed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> OpenLoopLoad:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.retry_s + 10)

    def take_window(self) -> Window:
        with self._lock:
            w = Window(self._acked, self._failed, self._shed, self._latencies)
            self._latencies, self._acked, self._failed, self._shed = [], 0, 0, 0
        return w

    async def _run(self) -> None:
        client = LogClient(
            self.endpoints(), timeout_s=self.retry_s, request_timeout_s=5, tls=self.tls
        )
        pending: set[asyncio.Task[None]] = set()
        period = 1.0 / self.rate
        start = time.monotonic()
        seq = 0
        try:
            while not self._stop.is_set():
                due = start + seq * period
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                if len(pending) >= self.max_in_flight:
                    with self._lock:
                        self._shed += 1
                        self.shed_total += 1
                else:
                    task = asyncio.create_task(self._append(client, seq, due))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
                seq += 1
            if pending:
                await asyncio.wait(pending, timeout=self.retry_s + 5)
        finally:
            await client.close()

    async def _append(self, client: LogClient, seq: int, due: float) -> None:
        value = f"k{seq % self.keys}=s{seq}".encode()
        try:
            await client.append([value], timeout_ms=5000)
        except (AdminError, OSError, TimeoutError) as e:
            with self._lock:
                self._failed += 1
                self.failed_total += 1
                self.last_errors = [*self.last_errors[-4:], f"s{seq}: {e}"]
            return
        took_ms = (time.monotonic() - due) * 1000
        with self._lock:
            self._acked += 1
            self.acked_total += 1
            self._latencies.append(took_ms)

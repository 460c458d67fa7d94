"""The leader's client appends in flight, answered by callback (the Produce hot path).

Role: give each `ClientAppend` an id, remember who to tell and when it was made, and tell them
exactly once: the last offset when the core emits `AppendCommitted`, `NotLeaderError` on
`AppendFailed`, `TimeoutError` when the client's timeout passes first (the records may still
commit later: Kafka's REQUEST_TIMED_OUT says the same). No task, future or timer handle per
append: one sweep timer runs while appends with deadlines are pending, and deadlines are kept
in one FIFO per timeout value, so each FIFO's deadlines are in order.
Invariant: a callback runs at most once; an answered append is forgotten at once.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

AppendCallback = Callable[[int | BaseException], None]

SWEEP_INTERVAL_S = 0.1  # a timed-out append is answered at most this late


class PendingAppends:
    def __init__(self, on_commit_latency_ms: Callable[[float], None]) -> None:
        self._by_id: dict[int, tuple[AppendCallback, float]] = {}
        self._fifos: dict[float, deque[tuple[float, int]]] = {}
        self._next = 0
        self._timer: asyncio.TimerHandle | None = None
        self._on_latency = on_commit_latency_ms

    def __len__(self) -> int:
        return len(self._by_id)

    def add(self, callback: AppendCallback, timeout_s: float | None) -> int:
        self._next += 1
        append_id = self._next
        self._by_id[append_id] = (callback, time.perf_counter())
        if timeout_s is not None:
            loop = asyncio.get_running_loop()
            fifo = self._fifos.get(timeout_s)
            if fifo is None:
                fifo = self._fifos[timeout_s] = deque()
            fifo.append((loop.time() + timeout_s, append_id))
            if self._timer is None:
                self._timer = loop.call_later(SWEEP_INTERVAL_S, self._sweep)
        return append_id

    def committed(self, append_id: int, last_offset: int) -> None:
        entry = self._by_id.pop(append_id, None)
        if entry is not None:
            self._on_latency((time.perf_counter() - entry[1]) * 1000)
            entry[0](last_offset)

    def failed(self, append_id: int, error: BaseException) -> None:
        entry = self._by_id.pop(append_id, None)
        if entry is not None:
            entry[0](error)

    def fail_all(self, error: BaseException) -> None:
        for append_id in list(self._by_id):
            self.failed(append_id, error)

    def _sweep(self) -> None:
        self._timer = None
        now = asyncio.get_running_loop().time()
        by_id = self._by_id
        for timeout, fifo in list(self._fifos.items()):
            while fifo and (fifo[0][1] not in by_id or fifo[0][0] <= now):
                _, append_id = fifo.popleft()
                self.failed(append_id, TimeoutError())
            if not fifo:
                del self._fifos[timeout]
        if self._fifos:
            self._timer = asyncio.get_running_loop().call_later(SWEEP_INTERVAL_S, self._sweep)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

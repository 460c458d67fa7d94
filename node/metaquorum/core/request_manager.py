"""Per-peer outbound request bookkeeping (Kafka's `RequestManager`; KIP-595 §Timeouts).

Role: remember, per destination, the one request in flight (correlation id, deadline) and a
retry backoff after a failure, so the core neither floods a dead peer nor waits forever.
Invariants: at most one request in flight per destination; a destination is ready iff nothing
is in flight and its backoff has passed; a response only counts if its correlation id is the
one in flight (late or duplicated responses are recognised and ignored). A request given up on
while in flight (its timeout, a `reset` on a state change, a newer request to the same
destination) is reported to `on_abandon` at once, so the driver closes the connection it went
on: a response the core would ignore must never arrive on a connection the next request uses,
or the leader would take that next Fetch as proof this replica accepted the ignored response
(the read lease, core/read_lease.py; Kafka's raft client keeps one request in flight per
connection, `KafkaRaftManager` max.in.flight = 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Connection:
    inflight_correlation_id: int | None = None
    request_deadline_ms: int = 0
    backoff_until_ms: int = 0


class RequestManager:
    __slots__ = ("_conns", "on_abandon", "request_timeout_ms", "retry_backoff_ms")

    def __init__(
        self,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        on_abandon: Callable[[int, int], None] | None = None,
    ):
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.on_abandon = on_abandon
        self._conns: dict[int, _Connection] = {}

    def _abandon(self, destination: int, conn: _Connection) -> None:
        cid = conn.inflight_correlation_id
        conn.inflight_correlation_id = None
        if cid is not None and self.on_abandon is not None:
            self.on_abandon(destination, cid)

    def _conn(self, destination: int) -> _Connection:
        conn = self._conns.get(destination)
        if conn is None:
            conn = self._conns[destination] = _Connection()
        return conn

    def is_ready(self, destination: int, now_ms: int) -> bool:
        conn = self._conns.get(destination)
        if conn is None:
            return True
        if conn.inflight_correlation_id is not None:
            if now_ms >= conn.request_deadline_ms:
                # Timed out: give up on it and back off (Kafka resets, then backs off).
                self._abandon(destination, conn)
                conn.backoff_until_ms = now_ms + self.retry_backoff_ms
            return False
        return now_ms >= conn.backoff_until_ms

    def has_inflight(self, destination: int, now_ms: int) -> bool:
        """A request is in flight to `destination` and has not timed out by `now_ms`."""
        conn = self._conns.get(destination)
        if conn is None or conn.inflight_correlation_id is None:
            return False
        if now_ms >= conn.request_deadline_ms:
            self._abandon(destination, conn)
            conn.backoff_until_ms = now_ms + self.retry_backoff_ms
            return False
        return True

    def back_off(self, destination: int, now_ms: int) -> None:
        """An answered request failed (an error code): retry only after the backoff."""
        conn = self._conn(destination)
        conn.backoff_until_ms = max(conn.backoff_until_ms, now_ms + self.retry_backoff_ms)

    def on_request_sent(self, destination: int, correlation_id: int, now_ms: int) -> None:
        conn = self._conn(destination)
        if conn.inflight_correlation_id is not None:
            self._abandon(destination, conn)
        conn.inflight_correlation_id = correlation_id
        conn.request_deadline_ms = now_ms + self.request_timeout_ms

    def on_response(
        self, destination: int, correlation_id: int, success: bool, now_ms: int
    ) -> bool:
        """Close the in-flight request; False if this response was not the one expected."""
        conn = self._conns.get(destination)
        if conn is None or conn.inflight_correlation_id != correlation_id:
            return False
        conn.inflight_correlation_id = None
        conn.backoff_until_ms = now_ms if success else now_ms + self.retry_backoff_ms
        return True

    def next_deadline_ms(self, destination: int) -> int | None:
        """When this destination's state changes on its own (timeout or end of backoff)."""
        conn = self._conns.get(destination)
        if conn is None:
            return None
        if conn.inflight_correlation_id is not None:
            return conn.request_deadline_ms
        return conn.backoff_until_ms

    def reset(self, destination: int | None = None) -> None:
        """Forget every destination (or one): requests in flight are abandoned."""
        targets = list(self._conns) if destination is None else [destination]
        for d in targets:
            conn = self._conns.pop(d, None)
            if conn is not None:
                self._abandon(d, conn)

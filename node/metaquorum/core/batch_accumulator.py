"""The leader's batch accumulator (Kafka's `BatchAccumulator`; `append.linger.ms`).

Role: collect appended records until the linger time since the first pending record passes
or the pending bytes reach the batch size limit, then hand them out as one batch.
Invariants: records leave in the order they came; a drained batch never exceeds the size
limit unless a single append is larger (it then travels alone); nothing is drained early.
"""

from __future__ import annotations

from metaquorum.core.value import value


@value
class PendingAppend:
    append_id: int
    values: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.values)


class BatchAccumulator:
    __slots__ = ("_first_ms", "_pending", "_size", "linger_ms", "max_batch_bytes")

    def __init__(self, linger_ms: int, max_batch_bytes: int):
        self.linger_ms = linger_ms
        self.max_batch_bytes = max_batch_bytes
        self._pending: list[PendingAppend] = []
        self._first_ms: int | None = None
        self._size = 0

    def __len__(self) -> int:
        return len(self._pending)

    def append(self, item: PendingAppend, now_ms: int) -> None:
        if self._first_ms is None:
            self._first_ms = now_ms
        self._pending.append(item)
        self._size += item.size

    def drain_deadline_ms(self) -> int | None:
        """When the pending records must be drained (None when nothing is pending)."""
        if self._first_ms is None:
            return None
        if self._size >= self.max_batch_bytes:
            return self._first_ms
        return self._first_ms + self.linger_ms

    def ready(self, now_ms: int) -> bool:
        deadline = self.drain_deadline_ms()
        return deadline is not None and now_ms >= deadline

    def drain(self, now_ms: int, *, force: bool = False) -> list[list[PendingAppend]]:
        """The pending records cut into batches of at most `max_batch_bytes`, if ready."""
        if not self._pending or not (force or self.ready(now_ms)):
            return []
        batches: list[list[PendingAppend]] = []
        current: list[PendingAppend] = []
        size = 0
        for item in self._pending:
            if current and size + item.size > self.max_batch_bytes:
                batches.append(current)
                current, size = [], 0
            current.append(item)
            size += item.size
        batches.append(current)
        self._pending.clear()
        self._first_ms = None
        self._size = 0
        return batches

    def abandon(self) -> list[PendingAppend]:
        """Drop everything (leadership lost): the caller fails these appends."""
        dropped = list(self._pending)
        self._pending.clear()
        self._first_ms = None
        self._size = 0
        return dropped

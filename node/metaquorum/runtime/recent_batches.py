"""The leader's newest encoded batches, kept in memory to answer followers' Fetch (zero-copy).

Role: the bytes a leader hands to storage for its own appends are also kept here, by base
offset, so a Fetch for them is answered without a hop to the storage thread (which may be in
an fsync). Bounded by `RECENT_BATCH_BYTES` (oldest dropped first) counted as memory, not payload:
each entry is charged its bytes plus `ENTRY_OVERHEAD` (the dict slot, the tuple, the offset int
and the bytes header). Charging payload only let one-record batches (170 bytes) hold ~40 MiB for
a 16 MiB bound (the soak's RSS growth, issue 33). Cleared on truncation and snapshot install.
Invariant: the bytes are exactly those written to the log; a read returns whole batches only,
or None when any of them is no longer here (the caller reads storage instead).
"""

from __future__ import annotations

from metaquorum.protocol.records import iter_batches

RECENT_BATCH_BYTES = 16 * 1024 * 1024
# Measured with tracemalloc on CPython 3.11 (tests/unit/runtime/test_recent_batches_memory.py):
# ~230 bytes per entry beyond the batch's own bytes.
ENTRY_OVERHEAD = 256


class RecentBatches:
    def __init__(self, limit_bytes: int = RECENT_BATCH_BYTES) -> None:
        self.batches: dict[int, tuple[int, bytes]] = {}  # base offset -> (end offset, bytes)
        self.size = 0
        self.limit = limit_bytes

    def remember(self, chunks: list[bytes]) -> None:
        """Keep freshly encoded batches (one batch per chunk)."""
        for chunk in chunks:
            batch = next(iter_batches(chunk))
            old = self.batches.get(batch.base_offset)
            if old is not None:
                self.size -= len(old[1]) + ENTRY_OVERHEAD
            self.batches[batch.base_offset] = (batch.last_offset + 1, chunk)
            self.size += len(chunk) + ENTRY_OVERHEAD
        while self.size > self.limit and self.batches:
            first = next(iter(self.batches))
            self.size -= len(self.batches.pop(first)[1]) + ENTRY_OVERHEAD

    def clear(self) -> None:
        self.batches.clear()
        self.size = 0

    def read(self, first: int, end: int, max_bytes: int) -> bytes | None:
        """The whole batches whose base offsets lie in [first, end), at least one and then up
        to `max_bytes` (as a storage read), if all of them are still here (else None)."""
        parts: list[bytes] = []
        pos, size = first, 0
        while pos < end:
            found = self.batches.get(pos)
            if found is None:
                return None
            if parts and size + len(found[1]) > max_bytes:
                break
            pos, chunk = found
            parts.append(chunk)
            size += len(chunk)
        return b"".join(parts)

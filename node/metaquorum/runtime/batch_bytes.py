"""The driver's byte caches: which bytes go to storage for the entries the core appends.

Role: a follower stores the leader's batches byte for byte (the records of the Fetch response
whose entries the core appends next); a leader encodes its own entries once and keeps the
bytes (`RecentBatches`) to answer followers' Fetch without a hop to the storage thread.
Invariants: received bytes are used only when whole batches cover exactly the appended offsets,
else the entries are re-encoded; both caches are dropped on truncation, received bytes also on
any snapshot, the leader's on a snapshot install and at the first append as a follower (a node
that led once held up to 16 MiB that no Fetch reads any more, for as long as it followed: one
part of the soak's RSS growth, issue 33).
"""

from __future__ import annotations

from metaquorum.core.log import LogEntry
from metaquorum.protocol.records import iter_batches
from metaquorum.runtime.recent_batches import RecentBatches
from metaquorum.runtime.records_bridge import batches_for_entries, clip_batches


class BatchBytes:
    __slots__ = ("_received", "recent")

    def __init__(self) -> None:
        self._received: dict[int, tuple[int, bytes]] = {}  # first offset -> (end, bytes)
        # The batches this node wrote as leader, by base offset: (end offset, bytes as stored).
        self.recent = RecentBatches()

    def keep_received(self, records: bytes, entries: tuple[LogEntry, ...]) -> None:
        """A Fetch response's records, for the entries decoded from them."""
        first, end = entries[0].offset, entries[-1].offset + 1
        exact = clip_batches(records, first, end)
        if exact and _covers(exact, first, end):
            self._received[first] = (end, exact)

    def for_append(
        self, entries: tuple[LogEntry, ...], *, leader: bool, now_ms: int
    ) -> list[bytes]:
        """The bytes to store for `entries`: the leader's as received, else encoded now (and
        remembered when this node leads)."""
        if not leader and self.recent.size:
            self.recent.clear()  # led before: no Fetch is answered from these any more
        first, end = entries[0].offset, entries[-1].offset + 1
        received = self._received.pop(first, None)
        self._received.clear()
        if received is not None and received[0] == end:
            return [received[1]]
        data = batches_for_entries(entries, timestamp_ms=now_ms)
        if leader:
            self.recent.remember(data)
        return data

    def on_truncate(self) -> None:
        self._received.clear()
        self.recent.clear()

    def on_snapshot(self, *, installed: bool) -> None:
        self._received.clear()
        if installed:
            self.recent.clear()

    def read_recent(self, first: int, end: int, max_bytes: int) -> bytes | None:
        return self.recent.read(first, end, max_bytes)


def _covers(data: bytes, first: int, end: int) -> bool:
    """Do the whole batches in `data` hold exactly the offsets [first, end)?"""
    batches = list(iter_batches(data))
    return bool(batches) and batches[0].base_offset == first and batches[-1].last_offset == end - 1

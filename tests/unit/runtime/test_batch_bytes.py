"""The driver's byte caches (runtime/batch_bytes.py): a follower stores the leader's bytes
exactly when whole received batches cover the appended offsets; otherwise it encodes; a leader
remembers what it encoded for followers' Fetch; truncation drops both caches."""

from __future__ import annotations

from metaquorum.core.log import LogEntry
from metaquorum.runtime.batch_bytes import BatchBytes
from metaquorum.runtime.records_bridge import batches_for_entries


def _entries(first: int, n: int, epoch: int = 3) -> tuple[LogEntry, ...]:
    return tuple(LogEntry(first + i, epoch, f"v{first + i}".encode()) for i in range(n))


def test_follower_stores_the_bytes_it_received_for_exactly_those_entries() -> None:
    cache = BatchBytes()
    entries = _entries(5, 3)
    leader_bytes = b"".join(batches_for_entries(entries, timestamp_ms=1234))
    cache.keep_received(leader_bytes, entries)
    assert cache.for_append(entries, leader=False, now_ms=999) == [leader_bytes]
    # Used once: the same entries again are encoded now (another timestamp, other bytes).
    again = cache.for_append(entries, leader=False, now_ms=999)
    assert again == batches_for_entries(entries, timestamp_ms=999) and again != [leader_bytes]


def test_received_bytes_for_other_offsets_are_not_used_and_truncation_drops_them() -> None:
    cache = BatchBytes()
    entries = _entries(5, 3)
    cache.keep_received(b"".join(batches_for_entries(entries, timestamp_ms=1)), entries)
    assert cache.for_append(entries[:2], leader=False, now_ms=7) == batches_for_entries(
        entries[:2], timestamp_ms=7
    )
    cache.keep_received(b"".join(batches_for_entries(entries, timestamp_ms=1)), entries)
    cache.on_truncate()
    assert cache.for_append(entries, leader=False, now_ms=7) == batches_for_entries(
        entries, timestamp_ms=7
    )


def test_leader_remembers_its_batches_until_truncation() -> None:
    cache = BatchBytes()
    entries = _entries(0, 4)
    data = cache.for_append(entries, leader=True, now_ms=50)
    assert cache.read_recent(0, 4, 1 << 20) == b"".join(data)
    cache.on_snapshot(installed=False)
    assert cache.read_recent(0, 4, 1 << 20) == b"".join(data)
    cache.on_truncate()
    assert cache.read_recent(0, 4, 1 << 20) is None


def test_a_former_leader_drops_its_batches_at_its_first_append_as_a_follower() -> None:
    """A node that led once kept up to 16 MiB of batches (plus per-entry overhead) that no
    Fetch reads while it follows: each node of the soak that had led held it (issue 33)."""
    cache = BatchBytes()
    led = _entries(0, 4, epoch=3)
    data = cache.for_append(led, leader=True, now_ms=50)
    assert cache.read_recent(0, 4, 1 << 20) == b"".join(data)
    # The next leader's entries, received byte for byte (the follower's usual path).
    followed = _entries(4, 2, epoch=4)
    cache.keep_received(b"".join(batches_for_entries(followed, timestamp_ms=60)), followed)
    cache.for_append(followed, leader=False, now_ms=61)
    assert cache.read_recent(0, 4, 1 << 20) is None
    assert cache.recent.size == 0 and not cache.recent.batches

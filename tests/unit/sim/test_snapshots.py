"""sim/snapshots.py: the committed prefix's snapshot, and its data batch encoded once."""

from __future__ import annotations

from metaquorum.core.log import LogEntry
from metaquorum.protocol.messages import VotersRecord
from metaquorum.protocol.records.iteration import iter_batches
from metaquorum.sim.snapshots import committed_snapshot


def _committed(n: int) -> list[LogEntry]:
    return [LogEntry(i, 1 + i // 3, b"v%d" % i) for i in range(n)]


def test_the_cached_snapshot_is_the_same_bytes_and_encoded_once() -> None:
    committed = _committed(10)
    cache: dict[tuple[int, int], bytes] = {}
    plain = committed_snapshot(committed, 7)
    assert plain is not None
    assert committed_snapshot(committed, 7, cache=cache) == plain
    assert list(cache) == [(7, 1)]
    cache[(7, 1)] = b"planted"  # a second call at that end reuses the stored batch
    assert committed_snapshot(committed, 7, cache=cache) != plain
    assert committed_snapshot(committed, 8, cache=cache) == committed_snapshot(committed, 8)
    # The header's records move the data batch's base offset: another key, other bytes.
    voters = VotersRecord(version=0, voters=[])
    with_voters = committed_snapshot(committed, 7, (1, voters), cache=cache)
    assert (7, 3) in cache and with_voters == committed_snapshot(committed, 7, (1, voters))


def test_the_snapshot_holds_the_prefix_below_end() -> None:
    committed = _committed(5)
    payload = committed_snapshot(committed, 4)
    assert payload is not None
    batches = list(iter_batches(payload))
    assert len(batches) == 3  # header, data, footer
    assert committed_snapshot(committed, 6) is None and committed_snapshot(committed, 0) is None

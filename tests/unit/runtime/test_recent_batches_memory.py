"""The leader's recent-batches cache stays within its bound as memory, not only as payload.

With one-record batches (170 bytes each, what a node appends at a low steady rate, as in the
soak) a bound counted on payload alone let the cache hold ~2.5x its limit in memory: the soak's
RSS grew for hours before the cache filled (issue 33).
"""

from __future__ import annotations

import tracemalloc

from metaquorum.protocol.records import build_batch
from metaquorum.runtime.recent_batches import RecentBatches

LIMIT = 2 * 1024 * 1024


def test_small_batches_hold_no_more_memory_than_the_bound() -> None:
    batches = [build_batch(off, 1, [b"x" * 100], timestamp_ms=1) for off in range(40_000)]
    cache = RecentBatches(limit_bytes=LIMIT)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for b in batches:
            cache.remember([b])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the chunks themselves were allocated before tracing: what is traced is the cache's own
    # structure, so add the payload it keeps
    payload = sum(len(chunk) for _, chunk in cache.batches.values())
    assert payload + (held - before) <= 1.2 * LIMIT, (payload, held - before)
    assert cache.size <= LIMIT


def test_the_newest_batches_are_kept_and_read_back_whole() -> None:
    cache = RecentBatches(limit_bytes=64 * 1024)
    batches = [build_batch(off, 1, [b"y" * 100], timestamp_ms=1) for off in range(1000)]
    for b in batches:
        cache.remember([b])
    kept = sorted(cache.batches)
    assert kept[-1] == 999 and kept == list(range(kept[0], 1000))
    assert cache.read(kept[0], kept[0] + 2, 10_000) == batches[kept[0]] + batches[kept[0] + 1]
    assert cache.read(0, 1, 10_000) is None  # dropped: the caller reads storage

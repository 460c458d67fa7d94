"""`serve` (a node process's main loop) moves the start-up objects to CPython's permanent GC
generation once the node is up, so full collections walk only what the running node allocates
(docs/performance.md, round 14: 18-37 ms full collections every few seconds under load)."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from metaquorum.runtime.config import config_from_properties
from metaquorum.runtime.node import NodeRuntime, serve

from tests.support.standalone_node import format_standalone


async def test_serve_freezes_the_start_up_objects_and_a_full_collection_skips_them(
    tmp_path: Path,
) -> None:
    props, _, _ = format_standalone(tmp_path)
    gc.unfreeze()
    runtime = NodeRuntime(config_from_properties(props), fsync=False)
    task = asyncio.create_task(serve(runtime))
    try:
        for _ in range(1000):
            if runtime.driver.node.leader_id == 1 and gc.get_freeze_count() > 0:
                break
            await asyncio.sleep(0.01)
        frozen = gc.get_freeze_count()
        # Everything alive at start-up (this test's own modules too) is frozen: what a full
        # collection still walks is a small fraction of it.
        assert frozen > 10_000
        assert len(gc.get_objects()) < frozen / 4
    finally:
        runtime.stop_requested.set()
        assert await asyncio.wait_for(task, 30) == 0
        gc.unfreeze()

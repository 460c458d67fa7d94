"""Graceful shutdown of a running node (SIGTERM), as Kafka's `KafkaRaftClient.shutdown(5000)`
and its `GracefulShutdown` (KIP-595 §EndQuorumEpoch, KIP-996).

Role: the driver's shutdown job, apart from its effect interpreter: post `Shutdown` to the core,
then wait (on the driver's one clock) until the core says the hand-over is complete, no other
voter can be reached, or the bound passes. Invariant: it never stops the driver itself
(`Driver.stop` follows) and never starts an election.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from metaquorum.core.events import Shutdown
from metaquorum.core.states import LeaderState

if TYPE_CHECKING:
    from metaquorum.runtime.driver import Driver

log = logging.getLogger("metaquorum.driver")


async def graceful_shutdown(driver: Driver, timeout_s: float = 5.0) -> None:
    """SIGTERM, as Kafka's `KafkaRaftClient.shutdown(5000)`: a leader hands its log over
    and resigns (EndQuorumEpoch), then keeps answering Vote requests until another leader
    is known, so its successor wins at once; no state starts a new election meanwhile.
    Returns when the core says the shutdown is complete, when no other voter can be
    reached any more (the whole quorum is stopping: nobody to hand over to), or after
    `timeout_s`; `stop` follows."""
    if not driver.running:
        return
    driver.post(Shutdown())
    others = set(driver.peers.connections)
    deadline = driver.clock.now_ms() + int(timeout_s * 1000)
    while not driver.shutdown_complete.is_set():
        if not isinstance(driver.node.state, LeaderState) and others <= driver.peers.unreachable:
            log.info("graceful shutdown: no other voter is reachable")
            return
        if driver.clock.now_ms() >= deadline:
            log.warning("graceful shutdown did not complete in %.1fs", timeout_s)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(driver.shutdown_complete.wait(), 0.05)
        if not isinstance(driver.node.state, LeaderState):
            await driver.peers.probe(0.2)
    await driver.peers.wait_idle(0.5)  # let the last acknowledgements go out

"""When the running node snapshots its state machine (KIP-630 on the node side).

Role: every `metadata.log.max.record.bytes.between.snapshots` applied bytes (Kafka's name), or
on `snapshot create` (POST /snapshot), hand the core a `CreateSnapshot` of the key-value state
machine below its applied offset; `snapshot_now` waits until the core has written it.
Invariants: only a prefix the state machine has applied, inside the core's log, is offered; the
core refuses one that is not committed (or not newer), so the policy never decides what is safe;
from kraft.version 1 the snapshot carries the voter set and kraft.version as of its last offset
(a node restarting from it, or a follower installing it, learns its membership there), chosen
by `core/snapshot_membership.py`, the same function the simulator's snapshots run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from metaquorum.core.events import CreateSnapshot, Event
from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
from metaquorum.core.log import RaftLog
from metaquorum.core.snapshot_membership import snapshot_membership
from metaquorum.runtime.clock import Clock
from metaquorum.runtime.state_machine import KeyValueStateMachine


class SnapshotPolicy:
    def __init__(
        self,
        state_machine: KeyValueStateMachine,
        post: Callable[[Event], None],
        clock: Clock,
        snapshot_bytes: int,
        control: KRaftControlRecordStateMachine,
    ) -> None:
        self.control = control  # the core's voter set / kraft.version by offset
        self.state_machine = state_machine
        self.post = post
        self.clock = clock
        self.snapshot_bytes = snapshot_bytes

    def maybe_snapshot(self, log: RaftLog) -> None:
        if self.state_machine.bytes_since_snapshot >= self.snapshot_bytes:
            self.create(log)

    def create(self, log: RaftLog) -> int | None:
        """Offer a snapshot below the applied offset; its end offset, or None if none."""
        sm = self.state_machine
        end = sm.applied_offset
        if not log.start_offset < end <= log.end_offset:
            return None
        sm.snapshot_written()
        kraft, record = snapshot_membership(self.control, end)  # the rule the simulator runs
        payload = sm.snapshot_payload(log.entry(end - 1).epoch, self.clock.now_ms(), kraft, record)
        self.post(CreateSnapshot(end, payload))
        return end

    async def snapshot_now(self, log: RaftLog, timeout_s: float) -> tuple[int, int] | None:
        """(end offset, epoch) once written, or None when there is nothing new to snapshot."""
        end = self.create(log)
        if end is None:
            return None
        deadline = self.clock.now_ms() + int(timeout_s * 1000)
        while self.clock.now_ms() < deadline:
            snap = log.snapshot
            if snap is not None and snap.snapshot_id.offset >= end:
                return snap.snapshot_id.offset, snap.snapshot_id.epoch
            await asyncio.sleep(0.01)
        return None

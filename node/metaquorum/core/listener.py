"""The listener API in Kafka's shape (`RaftClient.Listener`; KIP-595 §State machine API).

Role: a state machine registers a `RaftListener`; a `ListenerDispatcher`, fed with each step's
effects, calls `handle_commit(batch)` for committed entries in offset order (one `Batch` per
run of entries with the same epoch and kind), `handle_leader_change(leader)` on every new
leader or epoch, and `handle_load_snapshot(reader)` when a snapshot replaces the log prefix
(a follower that fetched the leader's snapshot, KIP-630). Appends are `ClientAppend` events; they
complete with `AppendCommitted` / `AppendFailed` effects.

Invariants: every committed offset is delivered exactly once, in order, and never before it is
committed (below the high watermark); as in Kafka's `maybeFireLeaderChange`, a listener hears
that its own replica leads only once it has been given everything up to the epoch start
offset, so it never acts as leader on a stale state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from metaquorum.core.effects import Effect, HighWatermarkAdvanced, InstallSnapshot, LeaderChanged
from metaquorum.core.log import EntryKind, LogEntry, RaftLog, Snapshot
from metaquorum.core.states import LeaderState, ResignedState
from metaquorum.core.value import value


@value
class Batch:
    """Kafka's `Batch`: consecutive committed records of one epoch."""

    base_offset: int
    epoch: int
    records: tuple[bytes, ...]
    control: bool = False

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1


@value
class LeaderAndEpoch:
    """Kafka's `LeaderAndEpoch`: `leader_id` None when unknown."""

    leader_id: int | None
    epoch: int


class RaftListener(Protocol):
    def handle_commit(self, batch: Batch) -> None: ...

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        """Replace the state with `snapshot` (everything below `snapshot.snapshot_id.offset`)."""
        ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


def to_batches(entries: Sequence[LogEntry]) -> list[Batch]:
    """Group consecutive entries of the same epoch and kind (data or control)."""
    out: list[Batch] = []
    run: list[LogEntry] = []
    for e in entries:
        if run and (
            e.epoch != run[0].epoch or (e.kind is EntryKind.DATA) != (run[0].kind is EntryKind.DATA)
        ):
            out.append(_batch(run))
            run = []
        run.append(e)
    if run:
        out.append(_batch(run))
    return out


def _batch(run: list[LogEntry]) -> Batch:
    first = run[0]
    control = first.kind is not EntryKind.DATA
    return Batch(first.offset, first.epoch, tuple(e.value for e in run), control)


class ListenerDispatcher:
    """Kafka's `ListenerContext`: the next offset a listener expects, and pending news."""

    def __init__(self, listener: RaftListener, local_id: int):
        self.listener = listener
        self.local_id = local_id
        self.next_offset = 0
        self._last_leader: LeaderAndEpoch | None = None
        self._pending_leader: LeaderAndEpoch | None = None

    def on_step(self, effects: Iterable[Effect], log: RaftLog, state: object) -> None:
        """Call after performing a step's effects (the log already holds the entries)."""
        for effect in effects:
            if isinstance(effect, LeaderChanged):
                leader = effect.leader_id if effect.leader_id >= 0 else None
                self._pending_leader = LeaderAndEpoch(leader, effect.epoch)
            elif isinstance(effect, InstallSnapshot):
                end = effect.snapshot.snapshot_id.offset
                if end > self.next_offset:
                    self.listener.handle_load_snapshot(effect.snapshot)
                    self.next_offset = end
            elif isinstance(effect, HighWatermarkAdvanced):
                self._deliver(log, effect.high_watermark)
        self._maybe_fire_leader_change(state)

    def _deliver(self, log: RaftLog, high_watermark: int) -> None:
        end = min(high_watermark, log.end_offset)
        if end <= self.next_offset:
            return
        for batch in to_batches(log.read(self.next_offset, end - self.next_offset)):
            self.listener.handle_commit(batch)
        self.next_offset = end

    def _maybe_fire_leader_change(self, state: object) -> None:
        pending = self._pending_leader
        if pending is None or pending == self._last_leader:
            return
        if pending.leader_id == self.local_id:
            if isinstance(state, ResignedState):
                return
            if isinstance(state, LeaderState) and self.next_offset < state.epoch_start_offset:
                return  # not caught up with the previous epochs yet
        self._last_leader = pending
        self._pending_leader = None
        self.listener.handle_leader_change(pending)

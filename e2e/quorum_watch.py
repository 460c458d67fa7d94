"""The live quorum watched from the test process, and the invariants the operator must keep.

Role: `Watcher` polls DescribeQuorum (metaquorum.admin, through the pods' stable names) every
~0.1 s on a thread of its own and records each answer as a `Seen` (leader, epoch, high
watermark, the leader's log end offset, the voter set as KIP-853 (id, directory id) keys and
which voters the leader sees caught up). `check` reads a recorded sequence and names every
violation of the operator's invariants (issue 16's nemesis):

- majority: whenever a leader answers, more than half of its voters are caught up, unless a
  voter the nemesis itself took down is among those not caught up (`Fault` windows): the
  operator never leaves fewer than a majority of voters up. Not judged in the first
  `epoch_grace_s` of an epoch: a new leader knows nothing of its followers until they fetch
  (Kafka's DescribeQuorum shows -1 for them);
- leaderless: no stretch without an answering leader longer than `leaderless_bound_s`;
- one change at a time: two consecutive voter sets differ by at most one member, and no voter
  set appears while the previous one is certainly uncommitted: its VotersRecord was appended
  after the last answer that still showed the set before it, so at an offset at or past that
  answer's log end offset L; the next set's first answer (same epoch) with a high watermark at
  or below L proves the record uncommitted when the next one was appended (the HW only grows
  within an epoch). The first sighting's LEO (the operator's own `membership.advance` bound) is
  not used: under load the watcher sees a change late, its LEO well past the record (the
  client appends all along), and a change the leader committed in time looked early.

Caught up, as the leader sees it: the replica's last caught-up timestamp within `lag_ms` of
the leader's own (Kafka's DescribeQuorum timestamps; the leader's own entry is "now").
Invariant: `check` is pure (unit-tested on synthetic bad sequences in
test_operator_nemesis_checker.py, so a broken operator does show up).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Key = tuple[int, str]


@dataclass(frozen=True, slots=True)
class Seen:
    t: float  # time.monotonic() of the answer
    leader: int  # -1: no answering leader (error, election)
    epoch: int = -1
    hw: int = -1
    leo: int = -1  # the leader's log end offset
    voters: frozenset[Key] = frozenset()
    up: frozenset[Key] = frozenset()  # voters caught up, as the leader sees them
    wall_ms: int = 0  # time.time() of the answer, ms
    error: str = ""
    caught_up_ms: tuple[tuple[Key, int], ...] = ()  # each voter's last caught-up time (leader's)

    def caught_up_since(self, key: Key, wall_ms: float) -> bool:
        """Whether the leader saw `key` caught up at or after `wall_ms` (its clock is ours)."""
        return dict(self.caught_up_ms).get(key, -1) >= wall_ms


@dataclass(frozen=True, slots=True)
class Fault:
    """A voter the nemesis took down (kill -9, disk loss) from `start` until `end` (monotonic);
    `end` is when the test saw the quorum healed (inf while open)."""

    node: int
    start: float
    end: float = float("inf")
    kind: str = ""


def seen_from(info: Any, t: float, lag_ms: int = 6000) -> Seen:
    """A DescribeQuorum answer (metaquorum.admin QuorumInfo) as a `Seen`."""
    voters = {(v.replica_id, str(v.directory_id)): v for v in info.voters}
    leader = next((v for v in info.voters if v.replica_id == info.leader_id), None)
    now = leader.last_caught_up_timestamp if leader is not None else -1
    up = frozenset(
        k
        for k, v in voters.items()
        if k[0] == info.leader_id
        or (min(now, ts := v.last_caught_up_timestamp) >= 0 and now - ts <= lag_ms)
    )
    return Seen(
        t=t,
        leader=info.leader_id,
        epoch=info.leader_epoch,
        hw=info.high_watermark,
        leo=leader.log_end_offset if leader is not None else -1,
        voters=frozenset(voters),
        up=up,
        wall_ms=int(time.time() * 1000),
        caught_up_ms=tuple(sorted((k, v.last_caught_up_timestamp) for k, v in voters.items())),
    )


def check(
    seen: Sequence[Seen],
    faults: Sequence[Fault] = (),
    leaderless_bound_s: float = 20.0,
    epoch_grace_s: float = 3.0,
    log_sets: Sequence[frozenset[Key]] | None = None,
) -> list[str]:
    """Every violation of the invariants in the module docstring, in time order. `log_sets`:
    the voter sets of the log's VotersRecords in offset order (log_voters.py), when known: a
    set that changed by two members between two answers is then no violation if the log went
    between them one member per record (the watcher missed an answer's worth of changes)."""
    out: list[str] = []
    epoch, epoch_t = -1, 0.0
    last_leader_t: float | None = seen[0].t if seen else None
    prev: Seen | None = None
    change_lo = -1  # the current voter set's record is at or past this offset
    change_epoch = -1
    best_hw = -1  # the highest HW seen in change_epoch since the change
    for s in seen:
        if s.leader < 0:
            if last_leader_t is not None and s.t - last_leader_t > leaderless_bound_s:
                out.append(f"t={s.t:.1f}: no leader for {s.t - last_leader_t:.1f} s ({s.error})")
                last_leader_t = s.t  # report each stretch once per bound
            continue
        last_leader_t = s.t
        if s.epoch != epoch:
            epoch, epoch_t = s.epoch, s.t
        down = s.voters - s.up
        if 2 * len(s.up & s.voters) <= len(s.voters) and s.t - epoch_t >= epoch_grace_s:
            faulted = {f.node for f in faults if f.start <= s.t <= f.end}
            if not {k[0] for k in down} <= faulted:
                out.append(
                    f"t={s.t:.1f}: {len(s.up & s.voters)} of {len(s.voters)} voters caught up"
                    f" (down: {sorted(down)}, nemesis faults: {sorted(faulted)})"
                )
        if prev is not None and s.voters != prev.voters:
            diff = s.voters ^ prev.voters
            missed = log_sets is not None and one_at_a_time_between(log_sets, prev.voters, s.voters)
            if len(diff) > 1 and not missed:
                out.append(
                    f"t={s.t:.1f}: voter set changed by {len(diff)} members at once: "
                    f"{sorted(prev.voters)} -> {sorted(s.voters)}"
                )
            if s.epoch == change_epoch and max(best_hw, s.hw) <= change_lo:
                out.append(
                    f"t={s.t:.1f}: voter set changed to {sorted(s.voters)} before the previous "
                    f"set {sorted(prev.voters)} was committed (its record is at or past offset "
                    f"{change_lo}; the hw is {s.hw} in epoch {s.epoch})"
                )
            change_lo, change_epoch, best_hw = prev.leo, prev.epoch, -1
        if s.epoch == change_epoch:
            best_hw = max(best_hw, s.hw)
        prev = s
    return out


def one_at_a_time_between(
    sets: Sequence[frozenset[Key]], before: frozenset[Key], after: frozenset[Key]
) -> bool:
    """Whether the log went from `before` to `after` one member per record: a watcher that
    saw the two with nothing between only missed the sets in between (two changes committed
    within one of its polls)."""
    for i, s in enumerate(sets):
        if s != before:
            continue
        for j in range(i + 1, len(sets)):
            if len(sets[j - 1] ^ sets[j]) != 1:
                break
            if sets[j] == after:
                return True
    return False


@dataclass
class Watcher:
    """DescribeQuorum every `interval_s` through `hosts` (host, port) until stopped."""

    hosts: Sequence[tuple[str, int]]
    interval_s: float = 0.1
    seen: list[Seen] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Watcher:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[Seen]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        return list(self.seen)

    def latest(self) -> Seen | None:
        return self.seen[-1] if self.seen else None

    async def _run(self) -> None:
        from metaquorum.admin.client import AdminClient
        from metaquorum.net.endpoint import Endpoint

        admin: AdminClient | None = None
        while not self._stop.is_set():
            if admin is None:
                admin = AdminClient([Endpoint(h, p) for h, p in self.hosts], timeout_s=2)
            try:
                info = await asyncio.wait_for(admin.describe_quorum(), 3)
                self.seen.append(seen_from(info, time.monotonic()))
            except Exception as e:  # no leader, a pod down: recorded, the client rebuilt
                self.seen.append(Seen(time.monotonic(), -1, error=f"{type(e).__name__}: {e}"[:200]))
                await admin.close()
                admin = None
            await asyncio.sleep(self.interval_s)
        if admin is not None:
            await admin.close()

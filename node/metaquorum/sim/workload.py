"""The client workload of a simulation: appends to the newest leader, and what became of them.

Role: every ~`append_interval_ms` (drawn from 1/2 to 3/2 of it) of the fault phase and the
tail after it, a client appends one value `v<id>` to the running leader of the highest epoch;
with no leader the interval counts as unavailable. The core answers each append with
`AppendCommitted` (its latency is recorded and the checker verifies the value is in the
committed prefix at that offset) or `AppendFailed`. It reaches the simulation only through
`World` (sim/surface.py).
Invariant: an append id is answered at most once (an answer to an unknown id is ignored: the
leader that took it may have crashed and another answered nothing).
"""

from __future__ import annotations

from metaquorum.core.effects import AppendCommitted, AppendFailed
from metaquorum.core.events import ClientAppend
from metaquorum.core.rng import randint
from metaquorum.sim.surface import Kind, World


class ClientWorkload:
    def __init__(self, world: World) -> None:
        self.world = world
        self.append_sent: dict[int, tuple[int, bytes]] = {}  # id -> (sent at, value)
        self.commit_latencies: list[int] = []
        self.appends_failed = 0
        self.unavailable_ms = 0
        self.next_append_id = 0
        self.last_commit_ms = -1

    def start(self) -> None:
        p = self.world.params
        if p.append_interval_ms > 0:
            self.world.push(randint(self.world.rng, 0, p.append_interval_ms), Kind.APPEND, 0, None)

    def client_append(self) -> None:
        w = self.world
        p = w.params
        now = w.now
        interval = p.append_interval_ms
        if now < p.fault_end_ms + p.workload_tail_ms:
            w.push(now + randint(w.rng, interval // 2, interval * 3 // 2), Kind.APPEND, 0, None)
        leader = w.current_leader()
        if leader is None:
            self.unavailable_ms += interval
            return
        self.next_append_id += 1
        aid = self.next_append_id
        value = b"v%d" % aid
        self.append_sent[aid] = (now, value)
        w.record(f"{now} append {leader} {aid}\n")
        w.step(leader, ClientAppend(aid, (value,)))

    def committed(self, nid: int, eff: AppendCommitted) -> None:
        sent = self.append_sent.pop(eff.append_id, None)
        if sent is not None:
            now = self.world.now
            self.commit_latencies.append(now - sent[0])
            self.world.checker.on_append_committed(nid, eff.last_offset, sent[1])
            self.last_commit_ms = now

    def failed(self, eff: AppendFailed) -> None:
        self.append_sent.pop(eff.append_id, None)
        self.appends_failed += 1

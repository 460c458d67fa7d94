"""The simulated network: per-link drop, delay (hence reordering), duplication, partitions.

Role: decide, for each message, how many copies arrive and when. A message lost by chance
(`drop`) models a broken connection: the driver tells the requester (`RequestFailed`), as
a TCP reset would; a partition drops silently, so only request timeouts notice it. Links
are directed: a one-way partition blocks (a, b) but not (b, a); a full one blocks both.
Invariants: all randomness comes from the simulation's seeded RNG; a blocked link delivers
nothing; delivery times are never in the past.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from metaquorum.core.rng import randint


@dataclass(frozen=True, slots=True)
class LinkProfile:
    drop: float = 0.0
    duplicate: float = 0.0
    delay_min_ms: int = 1
    delay_max_ms: int = 5


class Network:
    __slots__ = ("blocked", "lossy_drop", "profile", "rng")

    def __init__(self, rng: random.Random, profile: LinkProfile):
        self.rng = rng
        self.profile = profile
        self.blocked: set[tuple[int, int]] = set()
        self.lossy_drop = False  # set by `deliveries` when the last message was lost by chance

    def deliveries(self, src: int, dst: int, now_ms: int) -> list[int]:
        """Arrival times of the copies of one message from `src` to `dst`."""
        self.lossy_drop = False
        if (src, dst) in self.blocked:
            return []
        p = self.profile
        rng = self.rng
        if p.drop and rng.random() < p.drop:
            self.lossy_drop = True
            return []
        times = [now_ms + randint(rng, p.delay_min_ms, p.delay_max_ms)]
        if p.duplicate and rng.random() < p.duplicate:
            times.append(now_ms + randint(rng, p.delay_min_ms, p.delay_max_ms * 3))
        return times

    def isolate(self, node: int, others: list[int]) -> None:
        for o in others:
            if o != node:
                self.blocked.add((node, o))
                self.blocked.add((o, node))

    def cut(self, src: int, dst: int) -> None:
        self.blocked.add((src, dst))

    def split(self, group: list[int], rest: list[int]) -> None:
        for a in group:
            for b in rest:
                self.blocked.add((a, b))
                self.blocked.add((b, a))

    def heal(self) -> None:
        """Faults stop: no partitions, and the links become clean (no loss, no duplicates)."""
        self.blocked.clear()
        self.profile = LinkProfile(0.0, 0.0, self.profile.delay_min_ms, self.profile.delay_max_ms)

"""What the simulator's collaborators may read and do: the narrow surface of a `Simulation`.

Role: the operator's membership workload (sim/membership.py), the client workload
(sim/workload.py) and the worst-moment crashes (sim/buggify.py) are written against `World`,
not against `sim/cluster.py`'s `Simulation`, so a reader sees in one place what they touch:
the run's params, its RNG and virtual clock, the replicas' cores (read only), the invariant
checker, the trace, and one way to act, `push` (an event into the queue). The fault injector
(sim/faults.py) extends it with the machinery it breaks (network, disks, crash and boot).
Also here: the kinds of queued events, so every module names them from one place.
Invariants: nothing here imports `sim/cluster.py` (the simulator sits above its collaborators,
never below them); all randomness a collaborator draws comes from `World.rng`, in the order
the simulator calls it, so a seed still reproduces the run.
"""

from __future__ import annotations

import random
from typing import Any, Final, Protocol

from metaquorum.core.events import Event
from metaquorum.core.node import RaftNode
from metaquorum.sim.invariants import InvariantChecker
from metaquorum.sim.params import SimParams


class Kind:
    """The kinds of queued events (`World.push`); ties in time break by insertion order."""

    POLL: Final = 0
    REQUEST: Final = 1
    RESPONSE: Final = 2
    FLUSH: Final = 3
    FAULT: Final = 4
    APPEND: Final = 5
    CHECK: Final = 6
    FAILED: Final = 7
    SNAPSHOT: Final = 8
    MEMBERSHIP: Final = 9


# Kinds that wait while their replica is paused (a paused process handles nothing).
PAUSABLE = frozenset(
    (Kind.POLL, Kind.REQUEST, Kind.RESPONSE, Kind.FLUSH, Kind.FAILED, Kind.SNAPSHOT)
)


class UnknownEffect(TypeError):
    """The core emitted an effect the simulator has no handler for (DESIGN.md §4: every
    effect type is handled by every driver or refused loudly)."""


class World(Protocol):
    """The simulation as its workloads see it."""

    @property
    def params(self) -> SimParams: ...

    @property
    def rng(self) -> random.Random: ...

    @property
    def now(self) -> int:
        """Virtual milliseconds since the start."""
        ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def all_ids(self) -> list[int]:
        """Every replica's id, voters first (1..voters, then the observers)."""
        ...

    @property
    def nodes(self) -> dict[int, RaftNode | None]:
        """Each replica's running core (None while it is down); read, never mutated."""
        ...

    @property
    def incarnation(self) -> dict[int, int]:
        """Bumped at every boot and crash: an answer to an older incarnation is dropped."""
        ...

    @property
    def checker(self) -> InvariantChecker: ...

    def push(self, t: int, kind: int, nid: int, data: Any) -> None:
        """Queue an event of `kind` for replica `nid` (0: the harness) at time `t`."""
        ...

    def record(self, text: str) -> None:
        """Append a line to the trace (and its hash)."""
        ...

    def step(self, nid: int, event: Event) -> None:
        """Hand `event` to replica `nid`'s core now and perform its effects."""
        ...

    def current_leader(self) -> int | None:
        """The running, unpaused leader of the highest epoch, if any."""
        ...

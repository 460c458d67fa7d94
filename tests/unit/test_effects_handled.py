"""Every effect the core can emit is handled by both of its drivers, the runtime's
(runtime/driver.py) and the simulator's (sim/cluster.py), and an effect neither knows is
refused loudly (DESIGN.md §4). The effect types are read from the core's `Effect` union, so a
new effect fails here until both drivers handle it (and `sample` builds one)."""

from __future__ import annotations

import asyncio
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest
from metaquorum.core import effects as fx
from metaquorum.core.ids import OffsetAndEpoch, ReplicaKey
from metaquorum.core.log import LogEntry, Snapshot
from metaquorum.core.states import ElectionState
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
from metaquorum.protocol.messages import ApiVersionsRequestData, ApiVersionsResponseData
from metaquorum.runtime.clock import ManualClock
from metaquorum.runtime.driver import Driver
from metaquorum.sim.cluster import EFFECT_HANDLERS, Simulation
from metaquorum.sim.params import MIXES
from metaquorum.sim.snapshots import committed_snapshot
from metaquorum.sim.surface import UnknownEffect

from tests.pure_build import is_extension
from tests.support.runtime_driver import static_quorum_driver

EFFECT_TYPES: tuple[type, ...] = typing.get_args(fx.Effect)


@dataclass(frozen=True)
class NotAnEffect:
    """What a core with a new, unhandled effect would emit."""

    what: str = "new"


def _snapshot() -> Snapshot:
    committed = [LogEntry(0, 1, b"a"), LogEntry(1, 1, b"b")]
    payload = committed_snapshot(committed, 2)
    assert payload is not None
    return Snapshot(OffsetAndEpoch(1, 2), payload)


def sample(kind: type) -> object:
    """One harmless instance of each effect type."""
    voters = VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, None), (ListenerEndpoint("CONTROLLER", "127.0.0.1", i),), 0, 1)
        for i in (1, 2, 3)
    )
    samples: dict[type, object] = {
        fx.SendRequest: fx.SendRequest(2, 7, ApiVersionsRequestData()),
        fx.AbandonRequest: fx.AbandonRequest(2, 7),
        fx.SendResponse: fx.SendResponse(2, 8, ApiVersionsResponseData()),
        fx.PersistElectionState: fx.PersistElectionState(ElectionState(1, -1, None)),
        fx.AppendEntries: fx.AppendEntries(()),
        fx.TruncateLog: fx.TruncateLog(0),
        fx.FlushLog: fx.FlushLog(0),
        fx.WriteSnapshot: fx.WriteSnapshot(_snapshot()),
        fx.InstallSnapshot: fx.InstallSnapshot(_snapshot()),
        fx.HighWatermarkAdvanced: fx.HighWatermarkAdvanced(0),
        fx.LeaderChanged: fx.LeaderChanged(2, 1),
        fx.VotersChanged: fx.VotersChanged(voters),
        fx.KRaftVersionUpgrade: fx.KRaftVersionUpgrade(1, None),
        fx.AppendCommitted: fx.AppendCommitted(99, 0),
        fx.AppendFailed: fx.AppendFailed(99, "not the leader"),
    }
    if kind not in samples:
        raise AssertionError(f"no sample of the core's new effect {kind.__name__}: add one here")
    return samples[kind]


def test_the_effect_union_is_read_from_the_core() -> None:
    assert len(EFFECT_TYPES) >= 14
    assert all(t.__module__ == fx.__name__ for t in EFFECT_TYPES)
    assert fx.KRaftVersionUpgrade in EFFECT_TYPES


# --- the simulator -------------------------------------------------------------------------
def _booted_simulation() -> Simulation:
    sim = Simulation(MIXES["membership"].with_seed(0))  # kraft.version 1: every path
    for nid in sim.all_ids:
        sim.boot(nid)
    return sim


def test_the_simulator_has_a_handler_for_every_effect_type() -> None:
    assert set(EFFECT_HANDLERS) == set(EFFECT_TYPES)


@pytest.mark.parametrize("kind", EFFECT_TYPES, ids=lambda t: t.__name__)
def test_the_simulator_performs_every_effect_type(kind: type) -> None:
    sim = _booted_simulation()
    node = sim.nodes[1]
    assert node is not None
    before = len(sim.queue)
    sim.apply(1, node, fx.Step([sample(kind)], next_deadline_ms=10**9))  # type: ignore[list-item]
    assert len(sim.queue) >= before
    if kind is fx.KRaftVersionUpgrade:
        assert sim.kraft_upgrades == [(1, 1, None)]


def _compiled(cls: type) -> bool:
    """Whether `cls` comes from an extension module (the compiled build, issue 28)."""
    return is_extension(sys.modules[cls.__module__].__file__)


def test_the_simulator_refuses_an_unknown_effect() -> None:
    sim = _booted_simulation()
    node = sim.nodes[1]
    assert node is not None
    # pure Python: the simulator's UnknownEffect (a TypeError); the compiled build (mypyc)
    # refuses it one step earlier, reading a list element that is not of the Effect union
    with pytest.raises(TypeError, match="NotAnEffect") as refused:
        sim.apply(1, node, fx.Step([NotAnEffect()], next_deadline_ms=10**9))  # type: ignore[list-item]
    assert _compiled(Simulation) or isinstance(refused.value, UnknownEffect)


# --- the runtime ---------------------------------------------------------------------------
def _driver(tmp_path: Path) -> Driver:
    return static_quorum_driver(tmp_path, ManualClock(1_700_000_000_000))


@pytest.mark.parametrize("kind", EFFECT_TYPES, ids=lambda t: t.__name__)
async def test_the_runtime_performs_every_effect_type(tmp_path: Path, kind: type) -> None:
    driver = _driver(tmp_path)
    try:
        await driver._perform(fx.Step([sample(kind)], next_deadline_ms=0))  # type: ignore[list-item]
        await asyncio.sleep(0)
        assert driver.failure is None and driver.io.failed is None
    finally:
        await driver.stop()


async def test_the_runtime_refuses_an_unknown_effect(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    try:
        # pure Python: the driver's assert_never; the compiled build (mypyc) refuses it one step
        # earlier, reading a list element that is not of the declared Effect union
        with pytest.raises((AssertionError, TypeError), match="NotAnEffect") as refused:
            await driver._perform(fx.Step([NotAnEffect()], next_deadline_ms=0))  # type: ignore[list-item]
        assert _compiled(Driver) or isinstance(refused.value, AssertionError)
    finally:
        await driver.stop()

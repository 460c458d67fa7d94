"""The library API of the simulator: run one seed, get a plain record back.

Role: what the campaign pipeline (Spark) and the tests call. `run_seed(params)` returns a
`SeedResult` of plain values only (ints, floats, strings, lists, dicts), so it pickles and
converts to a Spark Row without custom types.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from metaquorum.sim.cluster import Simulation
from metaquorum.sim.params import SimParams, scenario_params


@dataclass(slots=True)
class SeedResult:
    seed: int
    scenario: str
    params: dict[str, object]
    events: int
    elections: int
    time_to_first_leader_ms: int | None
    commit_latencies_ms: list[int]
    appends_committed: int
    appends_failed: int
    unavailable_ms: int
    committed_offsets: int
    fsync_errors: int = 0
    paths: dict[str, int] = field(default_factory=dict)  # sim/reach.py: protocol paths taken
    moments: dict[str, int] = field(default_factory=dict)  # and worst moments that arose
    violations: list[dict[str, object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    trace_sha256: str = ""

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _result(sim: Simulation, params: SimParams, scenario: str) -> SeedResult:
    return SeedResult(
        seed=params.seed,
        scenario=scenario,
        params=params.describe(),
        events=sim.events,
        elections=sim.elections,
        time_to_first_leader_ms=sim.first_leader_ms,
        commit_latencies_ms=sim.workload.commit_latencies,
        appends_committed=len(sim.workload.commit_latencies),
        appends_failed=sim.workload.appends_failed,
        unavailable_ms=sim.workload.unavailable_ms,
        committed_offsets=len(sim.checker.committed),
        fsync_errors=sim.fsync_errors,
        paths=dict(sim.reach.paths),
        moments=dict(sim.reach.moments),
        violations=[asdict(v) for v in sim.checker.violations],
        notes=sim.notes,
        trace_sha256=sim.hash.hexdigest(),
    )


def run_seed(params: SimParams, scenario: str = "custom") -> SeedResult:
    sim = Simulation(params)
    sim.run()
    return _result(sim, params, scenario)


def run_scenario(name: str, seed: int, *, trace: bool = False) -> tuple[SeedResult, list[str]]:
    """Run a scenario for one seed; also returns the trace lines if asked.

    `name` is a mix of `MIXES`, optionally with overrides (`chaos+election.timeout.ms=500`,
    see `metaquorum.sim.params.scenario_params`); ValueError on a bad name.
    """
    from dataclasses import replace

    params = replace(scenario_params(name), seed=seed, trace=trace)
    sim = Simulation(params)
    sim.run()
    result = _result(sim, params, name)
    return result, sim.trace or []

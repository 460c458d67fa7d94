"""Parameters of one simulation run: cluster shape, fault mix, workload, timeline.

Role: a plain, hashable description of a run, so a seed plus its params reproduces it and
the campaign pipeline can ship them around. Named mixes (`MIXES`) are the CI's fault menu.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from metaquorum.core.config import QuorumConfig
from metaquorum.sim.network import LinkProfile


@dataclass(frozen=True, slots=True)
class FaultMix:
    """Relative weights of the faults injected during the fault phase, and their knobs."""

    interval_ms: int = 1500
    isolate: int = 0
    one_way: int = 0
    split: int = 0
    crash: int = 0
    pause: int = 0
    wipe: int = 0
    disk_fail: int = 0  # the victim's next fsync fails: it stops (fail-stop), restarts later
    crash_leader: int = 0  # crash the current leader (its followers time out together)
    duration_min_ms: int = 500
    duration_max_ms: int = 4000
    torn_write: float = 0.5
    stable_leadership: bool = False

    def weights(self) -> list[tuple[str, int]]:
        kinds = (
            "isolate",
            "one_way",
            "split",
            "crash",
            "pause",
            "wipe",
            "disk_fail",
            "crash_leader",
        )
        return [(k, getattr(self, k)) for k in kinds if getattr(self, k) > 0]


@dataclass(frozen=True, slots=True)
class SimParams:
    seed: int = 0
    voters: int = 3
    observers: int = 0
    mix: FaultMix = field(default_factory=FaultMix)
    link: LinkProfile = field(default_factory=LinkProfile)
    config: QuorumConfig = field(default_factory=QuorumConfig)
    flush_max_ms: int = 5
    append_interval_ms: int = 100
    fault_end_ms: int = 8000
    workload_tail_ms: int = 9000
    liveness_bound_ms: int = 15000
    snapshot_every: int = 0  # snapshot when this many committed entries follow the last one
    # ... at an offset up to this far below the HW (a state machine that applies behind the HW,
    # so voter changes sit above the snapshot's end)
    snapshot_lag_max: int = 0
    # KIP-853 (sim/membership.py): kraft.version 1 (directory ids, a bootstrap voter set), and
    # an operator's Add/RemoveRaftVoter every this many ms of the fault phase (0: none).
    kraft_version: int = 0
    membership_interval_ms: int = 0
    # Issue 33: a kraft.version 0 quorum (static voters with endpoints; replicas with directory
    # ids) that the operator upgrades to kraft.version 1, then changes as above; and the
    # probability that an operator action moves a voter's endpoint instead (it restarts with
    # another host name and sends UpdateRaftVoter).
    kraft_upgrade: bool = False
    move_endpoints: float = 0.0
    # sim/buggify.py: crash a replica at a worst moment with this probability (0: never), only
    # at the moments named in `buggify_moments` when it is not empty, restarting it after
    # `buggify_restart_ms` (min, max); and with probability `cut_after_removal` cut a leader
    # that just appended another voter's removal off from every remaining voter (not from the
    # removed one) for `cut_ms` (min, max), longer than check-quorum's 1.5 x fetch timeout.
    buggify: float = 0.0
    buggify_moments: tuple[str, ...] = ()
    buggify_restart_ms: tuple[int, int] = (200, 2000)
    cut_after_removal: float = 0.0
    cut_ms: tuple[int, int] = (3500, 5000)
    trace: bool = False

    @property
    def end_ms(self) -> int:
        return self.fault_end_ms + self.liveness_bound_ms

    def with_seed(self, seed: int) -> SimParams:
        return replace(self, seed=seed)

    def describe(self) -> dict[str, object]:
        return asdict(self)


NOISY = LinkProfile(drop=0.05, duplicate=0.05, delay_min_ms=1, delay_max_ms=40)

MIXES: dict[str, SimParams] = {
    "calm": SimParams(),
    "partitions": SimParams(mix=FaultMix(isolate=2, one_way=2, split=2), link=NOISY),
    "crashes": SimParams(mix=FaultMix(crash=3, pause=1), link=NOISY, flush_max_ms=20),
    "chaos": SimParams(
        mix=FaultMix(isolate=1, one_way=1, split=1, crash=2, pause=1, interval_ms=1000),
        link=NOISY,
        flush_max_ms=20,
    ),
    "five-chaos": SimParams(
        voters=5,
        observers=1,
        mix=FaultMix(isolate=1, one_way=1, split=2, crash=2, pause=1, interval_ms=1000),
        link=NOISY,
        flush_max_ms=20,
    ),
    "observers": SimParams(
        observers=2, mix=FaultMix(isolate=1, crash=2), link=NOISY, flush_max_ms=10
    ),
    "snapshots": SimParams(
        mix=FaultMix(isolate=2, crash=2, interval_ms=1200),
        link=NOISY,
        flush_max_ms=10,
        snapshot_every=15,
        config=QuorumConfig(snapshot_chunk_bytes=64),
    ),
    "disk-faults": SimParams(
        mix=FaultMix(disk_fail=3, crash=1, isolate=1, interval_ms=1200),
        link=NOISY,
        flush_max_ms=20,
    ),
    "membership": SimParams(
        observers=2,
        kraft_version=1,
        membership_interval_ms=700,
        buggify=0.02,
        mix=FaultMix(isolate=1, one_way=1, crash=2, pause=1, wipe=1, disk_fail=1, interval_ms=1200),
        link=NOISY,
        flush_max_ms=10,
        snapshot_every=25,  # voter sets also travel in snapshots (installed, loaded)
        config=QuorumConfig(snapshot_chunk_bytes=256),
        cut_after_removal=0.5,  # issue 33: cut the leader off right after a removal
    ),
    "five-membership": SimParams(
        voters=5,
        observers=1,
        kraft_version=1,
        membership_interval_ms=600,
        buggify=0.02,
        mix=FaultMix(
            isolate=1, one_way=1, split=1, crash=2, pause=1, wipe=1, disk_fail=1, interval_ms=1000
        ),
        link=NOISY,
        flush_max_ms=20,
        cut_after_removal=0.5,
    ),
    # Issue 33: UpdateRaftVoter and the kraft.version 0 -> 1 upgrade. A static kraft.version 0
    # quorum (3 voters, 1 observer) that the operator upgrades (retrying until it commits, also
    # after the faults), then changes (add, remove) or moves a voter's endpoint; snapshots every
    # 12 committed entries carry the upgraded voter set, with updates above them.
    "upgrade": SimParams(
        observers=1,
        kraft_upgrade=True,
        move_endpoints=0.5,
        membership_interval_ms=500,
        fault_end_ms=12000,  # the upgrade takes a few seconds under faults; then changes run
        buggify=0.02,
        mix=FaultMix(isolate=1, one_way=1, crash=2, pause=1, interval_ms=1200),
        link=NOISY,
        flush_max_ms=10,
        snapshot_every=12,
        snapshot_lag_max=10,
        config=QuorumConfig(snapshot_chunk_bytes=256),
    ),
    # Issue 33: the case vote persistence exists for. The leader crashes (its followers time
    # out together, so candidates of one epoch compete) and a replica that persisted a granted
    # vote crashes at once half the time, back 5-60 ms later, before the other candidate's
    # request or its retry.
    "vote-restart": SimParams(
        voters=5,
        buggify=0.5,
        buggify_moments=("vote-persisted",),
        buggify_restart_ms=(5, 60),
        mix=FaultMix(crash_leader=3, interval_ms=900, duration_min_ms=300, duration_max_ms=1500),
        link=NOISY,
        flush_max_ms=20,
    ),
    "stable-leadership": SimParams(
        mix=FaultMix(stable_leadership=True), append_interval_ms=0, fault_end_ms=14000
    ),
    "five-stable-leadership": SimParams(
        voters=5, mix=FaultMix(stable_leadership=True), append_interval_ms=0, fault_end_ms=14000
    ),
}

# A scenario name is a mix, optionally followed by overrides: `MIX[+KEY=VALUE]...`, e.g.
# `chaos+voters=5+election.timeout.ms=500`. KEY is `voters`, `observers`, `fault.interval.ms` or a
# `controller.quorum.*` config (the prefix may be left out). The campaign pipeline names its grid
# cells this way, so `python -m metaquorum.sim --seed N --scenario S` replays any cell's seed.
QUORUM_PREFIX = "controller.quorum."
_SHAPE_KEYS = ("voters", "observers", "fault.interval.ms")


def _quorum_attr(key: str) -> str | None:
    name = key if key.startswith(QUORUM_PREFIX) else QUORUM_PREFIX + key
    for attr in QuorumConfig.__dataclass_fields__:
        try:
            if QuorumConfig.kafka_name(attr) == name:
                return attr
        except KeyError:
            continue
    return None


def canonical_key(key: str) -> str:
    """The short form of an override key (no `controller.quorum.` prefix); raises if unknown."""
    if key in _SHAPE_KEYS:
        return key
    if _quorum_attr(key) is None:
        known = [QuorumConfig.kafka_name(a) for a in ("election_timeout_ms", "fetch_timeout_ms")]
        raise ValueError(f"unknown override {key!r}; use {', '.join(_SHAPE_KEYS)} or e.g. {known}")
    return key.removeprefix(QUORUM_PREFIX)


def scenario_name(mix: str, overrides: dict[str, int]) -> str:
    """`mix+key=value...` in the order given, keys in their short form."""
    if mix not in MIXES:
        raise ValueError(f"unknown mix {mix!r}; use one of: {', '.join(MIXES)}")
    return "+".join([mix, *(f"{canonical_key(k)}={int(v)}" for k, v in overrides.items())])


def scenario_params(name: str) -> SimParams:
    """The params a scenario name stands for (seed 0); raises ValueError on a bad name."""
    mix, *parts = name.split("+")
    if mix not in MIXES:
        raise ValueError(f"unknown mix {mix!r}; use one of: {', '.join(MIXES)}")
    params = MIXES[mix]
    config: dict[str, int] = {}
    for part in parts:
        key, sep, raw = part.partition("=")
        if not sep or not raw.lstrip("-").isdigit():
            raise ValueError(f"bad override {part!r} in {name!r}; expected KEY=INTEGER")
        value = int(raw)
        if key == "voters":
            params = replace(params, voters=value)
        elif key == "observers":
            params = replace(params, observers=value)
        elif key == "fault.interval.ms":
            params = replace(params, mix=replace(params.mix, interval_ms=value))
        else:
            attr = _quorum_attr(key)
            if attr is None:
                canonical_key(key)  # raises with the list of known keys
            config[str(attr)] = value
    if params.voters < 1 or params.observers < 0:
        raise ValueError(f"{name!r}: need at least one voter and no negative observer count")
    return replace(params, config=replace(params.config, **config)) if config else params

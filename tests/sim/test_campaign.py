"""The simulation campaign: seeds across every fault mix, zero violations.

Every seed runs the same core through a fault mix (see `metaquorum.sim.params.MIXES`) with all
invariants checked after every event and liveness checked after the faults stop. A failing
seed is reproduced with `python -m metaquorum.sim --seed N --scenario S --trace`.

Two sizes of one campaign: `make sim` (CI, in `make test`) runs `CI` seeds of each mix, 1,490
in all, sized for about 120 s of the whole tier on an idle 2-core machine; `make sim-long`
(marker `sim_long`, not in `make test`) runs the full `LONG` campaign, 4,950 seeds (2,000 of
them with KIP-853 membership changes and disk wipes, 400 with the kraft.version upgrade). Each
item also checks that its seeds reached what the mix exists for (`REACH_TARGETS`, issue 33).
Either is cut into short items of `CHUNK` seeds (a few seconds of CPU each here) so pytest-xdist
balances them over the cores and no item comes near pytest's timeout on a slower machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import pytest
from metaquorum.sim.api import run_scenario, run_seed
from metaquorum.sim.params import MIXES

pytestmark = pytest.mark.simulation

# mix: (seeds in CI, seeds in the long campaign, seeds per item). An item is sized to ~4-5 s of
# one idle core here (`--durations=0`), ~10-20 s on a machine 2-4x slower.
PLAN: dict[str, tuple[int, int, int]] = {
    "calm": (50, 100, 50),
    "partitions": (100, 300, 50),
    "crashes": (100, 300, 50),
    "chaos": (150, 350, 75),
    "five-chaos": (120, 300, 40),
    "observers": (100, 200, 50),
    "snapshots": (120, 250, 60),
    "disk-faults": (100, 200, 50),
    "stable-leadership": (100, 150, 100),
    "five-stable-leadership": (60, 100, 60),
    # KIP-853 (issue 14): dynamic voter sets (add, remove, replace a wiped voter, remove the
    # leader) under crashes, partitions and disk wipes, 3 and 5 voters.
    "membership": (175, 1000, 35),
    "five-membership": (175, 1000, 35),
    # Issue 33: a restart right after a persisted vote, then a competing candidate of that
    # epoch; the kraft.version 0 -> 1 upgrade, UpdateRaftVoter, snapshots below voter changes.
    "vote-restart": (60, 300, 30),
    "upgrade": (80, 400, 30),
}
# Issue 33: what every item of a mix must reach (sim/reach.py), so a change that stops a mix
# from reaching the situation it exists for fails CI instead of silently losing coverage.
REACH_TARGETS: dict[str, tuple[str, ...]] = {
    "vote-restart": ("vote-restart-competing", "crashed-at-vote-persisted"),
    "membership": ("leader-cut-after-removal", "leader-cut-off", "resign-after-removal"),
    "five-membership": ("leader-cut-after-removal", "leader-cut-off"),
    "upgrade": (
        "kraft-upgrade-committed",
        "rpc:UpdateRaftVoter",
        "voter-update-committed",
        "endpoint-moved",
        "snapshot-kraft1-below-voter-change",
    ),
    "partitions": ("leader-cut-off", "resign-check-quorum"),
    # Split-vote avoidance's second ask (core/vote_tally.py): crashed leaders' followers time
    # out together.
    "crashes": ("pre-vote-asked-again",),
}
MEMBERSHIP_MIXES = ("membership", "five-membership")
CI = {mix: ci for mix, (ci, _, _) in PLAN.items()}
LONG = {mix: long for mix, (_, long, _) in PLAN.items()}
CHUNK = {mix: chunk for mix, (_, _, chunk) in PLAN.items()}


def items(seeds: dict[str, int], *marks: pytest.MarkDecorator) -> list[object]:
    """One pytest item per `CHUNK[mix]` consecutive seeds, `mix:first-stop` as its id."""
    out: list[object] = []
    for mix, n in seeds.items():
        for first in range(0, n, CHUNK[mix]):
            stop = min(n, first + CHUNK[mix])
            out.append(pytest.param(mix, first, stop, id=f"{mix}:{first}-{stop}", marks=marks))
    return out


def test_campaigns_cover_every_mix_with_3_and_5_voters() -> None:
    for campaign in (CI, LONG):
        assert set(campaign) == set(MIXES)  # every mix, 3 and 5 voters, with observers
        assert {MIXES[m].voters for m in campaign} == {3, 5}
        assert any(MIXES[m].observers for m in campaign)
        assert all(campaign[m] >= 50 for m in campaign)
    static = [m for m in PLAN if m not in MEMBERSHIP_MIXES]
    assert sum(CI[m] for m in static) >= 1000 and sum(CI[m] for m in MEMBERSHIP_MIXES) >= 350
    assert sum(LONG[m] for m in static) >= 2000 and sum(LONG[m] for m in MEMBERSHIP_MIXES) >= 2000
    assert all(CI[m] <= LONG[m] for m in PLAN)  # the long campaign runs CI's seeds too
    assert {MIXES[m].voters for m in MEMBERSHIP_MIXES} == {3, 5}
    assert all(MIXES[m].mix.wipe and MIXES[m].kraft_version == 1 for m in MEMBERSHIP_MIXES)
    every_fault = {"isolate", "one_way", "split", "crash", "pause", "wipe", "disk_fail"}
    assert {k for m in MEMBERSHIP_MIXES for k, _ in MIXES[m].mix.weights()} == every_fault


def test_items_cover_each_seed_once_in_short_chunks() -> None:
    for campaign in (CI, LONG):
        seen: dict[str, list[int]] = {m: [] for m in campaign}
        for param in items(campaign):
            mix, first, stop = param.values  # type: ignore[attr-defined]
            assert 0 < stop - first <= CHUNK[mix]
            seen[mix].extend(range(first, stop))
        assert seen == {m: list(range(n)) for m, n in campaign.items()}


def _run_seeds(mix: str, first: int, stop: int) -> None:
    failures = []
    elections = 0
    reached: dict[str, int] = {}
    for seed in range(first, stop):
        result, _ = run_scenario(mix, seed)
        elections += result.elections
        for name, n in (*result.paths.items(), *result.moments.items()):
            reached[name] = reached.get(name, 0) + n
        if result.violations:
            failures.append((seed, result.violations[0]))
    assert not failures, (
        f"{len(failures)} of seeds {first}-{stop - 1} broke an invariant; first: {failures[0]} "
        f"(replay: python -m metaquorum.sim --seed {failures[0][0]} --scenario {mix} --trace)"
    )
    assert elections >= stop - first  # every seed elected at least one leader
    missed = [name for name in REACH_TARGETS.get(mix, ()) if not reached.get(name)]
    assert not missed, f"seeds {first}-{stop - 1} of {mix} never reached {missed}"


@pytest.mark.parametrize(("mix", "first", "stop"), items(CI))
def test_no_violations(mix: str, first: int, stop: int) -> None:
    _run_seeds(mix, first, stop)


@pytest.mark.parametrize(("mix", "first", "stop"), items(LONG, pytest.mark.sim_long))
def test_no_violations_long(mix: str, first: int, stop: int) -> None:
    _run_seeds(mix, first, stop)


def test_disk_faults_stop_the_replica_at_the_failed_fsync() -> None:
    """The fsync-error fault (issue 12): the replica stops at its failed flush (no `Flushed`
    reaches its core), restarts on its data later, and every seed still ends live and safe."""
    errors = 0
    for seed in range(10):
        result, trace = run_scenario("disk-faults", seed, trace=True)
        assert result.ok, result.violations[:1]
        errors += result.fsync_errors
        failed = [line.split()[2] for line in trace if " fsync-error " in line]
        assert len(failed) == result.fsync_errors
        for line in trace:
            if " fsync-error " in line:
                nid = line.split()[2]
                i = trace.index(line)
                assert trace[i + 1].split()[1:3] == ["crash", nid]  # stopped at once
    assert errors >= 10


def test_same_seed_same_trace_in_a_fresh_process() -> None:
    first, trace = run_scenario("chaos", 7, trace=True)
    again, _ = run_scenario("chaos", 7)
    assert first.trace_sha256 == again.trace_sha256
    assert len(trace) > 100
    other, _ = run_scenario("chaos", 8)
    assert other.trace_sha256 != first.trace_sha256
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-m", "metaquorum.sim", "--seed", "7", "--scenario", "chaos"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert f'"trace_sha256": "{first.trace_sha256}"' in out.stdout


def test_record_is_plain_data_for_the_pipeline() -> None:
    result = run_seed(replace(MIXES["crashes"], seed=3), "crashes")
    record = result.to_dict()
    assert record["seed"] == 3 and record["scenario"] == "crashes"
    assert isinstance(record["params"], dict) and record["params"]["voters"] == 3
    assert isinstance(record["events"], int) and record["events"] > 0
    assert isinstance(record["commit_latencies_ms"], list)
    first = record["time_to_first_leader_ms"]
    assert isinstance(first, int) and 1000 <= first <= 5000  # election timeout 1-2 s, + rounds


def test_membership_seeds_change_the_voter_set_and_replace_wiped_voters() -> None:
    """The membership mixes really exercise KIP-853: changes commit, wiped voters come back
    as observers under new directory ids, and the final voter sets differ from the start."""
    from metaquorum.sim.cluster import Simulation

    committed_changes = wiped = changed_sets = 0
    situations: dict[str, int] = {}
    for seed in range(60):
        sim = Simulation(MIXES["membership"].with_seed(seed))
        sim.run()
        assert not sim.checker.violations, (seed, sim.checker.violations[:1])
        committed_changes += sim.membership.admin_answers.get(0, 0)
        wiped += sum(sim.checker.generation.values())
        node = next(n for n in sim.nodes.values() if n is not None)
        changed_sets += node.voters.voter_ids != sim.membership.bootstrap_ids
        for k, v in sim.situations.items():
            situations[k] = situations.get(k, 0) + v
    assert committed_changes >= 60 and wiped >= 5 and changed_sets >= 30
    for moment in ("vote-persisted", "append-unflushed", "leader-voter-change", "snapshot-written"):
        assert situations.get(moment, 0) > 0, (moment, situations)


def test_membership_seeds_crash_replicas_at_every_worst_moment() -> None:
    """Every worst moment (sim/buggify.py) arises, and replicas are crashed at each of them.
    A leader's voter change arises ~2 times a seed; with the mix's own probability (2%) 60
    seeds may miss crashing at it (~7% whenever a change shifts the random streams), so these
    40 seeds crash at every tenth moment (a miss: ~1e-4)."""
    from metaquorum.sim.cluster import Simulation

    situations: dict[str, int] = {}
    for seed in range(40):
        sim = Simulation(replace(MIXES["membership"].with_seed(seed), buggify=0.1))
        sim.run()
        assert not sim.checker.violations, (seed, sim.checker.violations[:1])
        for k, v in sim.situations.items():
            situations[k] = situations.get(k, 0) + v
    for moment in ("vote-persisted", "append-unflushed", "leader-voter-change", "snapshot-written"):
        assert situations.get(moment, 0) > 0, (moment, situations)
        assert situations.get("crashed-at-" + moment, 0) > 0, (moment, situations)

"""Simulator benchmark: protocol events/s per core and seeds/s for the CI fault mix.

An "event" is one step of one replica's core (a delivered request or response, a flush
completion, a timer, a client append). Measured with CPU time of this process (one core):

- sim events/s: whole simulation (core + network + disk + invariants after every event);
- core events/s: the time spent inside `RaftNode.handle` only;
- seeds/s: the full campaign's static mixes in proportion, scaled down to `--seeds`, or one mix
  (`--mix membership`: its first `--seeds` seeds).

    .venv/bin/python bench/sim_bench.py [--seeds N] [--mix MIX] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from metaquorum.core.node import RaftNode
from metaquorum.sim.api import run_scenario

# Mix -> share of the seeds: the full campaign's static mixes (tests/sim/test_campaign.py LONG).
CI_MIX = {
    "calm": 100,
    "partitions": 300,
    "crashes": 300,
    "chaos": 350,
    "five-chaos": 300,
    "observers": 200,
    "snapshots": 250,
    "stable-leadership": 150,
    "five-stable-leadership": 100,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=200, help="seeds in all (default 200)")
    parser.add_argument("--mix", help="one mix of metaquorum.sim.params.MIXES instead")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    core_time = 0.0
    original = RaftNode.handle

    def timed(self: RaftNode, event: object, now_ms: int) -> object:
        nonlocal core_time
        t = time.process_time()
        try:
            return original(self, event, now_ms)  # type: ignore[arg-type]
        finally:
            core_time += time.process_time() - t

    total = sum(CI_MIX.values())
    plan = [(mix, max(1, round(args.seeds * n / total))) for mix, n in CI_MIX.items()]
    if args.mix:
        plan = [(args.mix, args.seeds)]
    # Pass 1: whole simulation, untimed core.
    events = seeds = violations = 0
    start = time.process_time()
    for mix, n in plan:
        for seed in range(n):
            result, _ = run_scenario(mix, seed)
            events += result.events
            seeds += 1
            violations += len(result.violations)
    sim_cpu = time.process_time() - start
    # Pass 2: the same seeds with the core's share measured.
    RaftNode.handle = timed  # type: ignore[method-assign,assignment]
    try:
        for mix, n in plan:
            for seed in range(n):
                run_scenario(mix, seed)
    finally:
        RaftNode.handle = original  # type: ignore[method-assign]
    report = {
        "seeds": seeds,
        "events": events,
        "violations": violations,
        "sim_events_per_s": round(events / sim_cpu),
        "core_events_per_s": round(events / core_time) if core_time else None,
        "seeds_per_s": round(seeds / sim_cpu, 2),
        "campaign_2000_seeds_estimate_s": round(2000 / (seeds / sim_cpu)),
    }
    if args.json:
        print(json.dumps(report))
    else:
        for k, v in report.items():
            print(f"{k:32} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

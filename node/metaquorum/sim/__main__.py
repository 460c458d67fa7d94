"""`python -m metaquorum.sim --seed N [--scenario S] [--trace]`: replay one seed.

Prints the run's record as one JSON line (violations with their event index, elections,
latencies, the trace's SHA-256); `--trace` prints the trace first. Exit code 0 when no
invariant broke, 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys

from metaquorum.sim.api import run_scenario
from metaquorum.sim.params import MIXES, scenario_params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metaquorum.sim", description=__doc__)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument(
        "--scenario",
        default="chaos",
        help=f"MIX[+KEY=VALUE]..., MIX one of: {', '.join(MIXES)}; KEY voters, observers,"
        " fault.interval.ms or a controller.quorum.* config, e.g. chaos+election.timeout.ms=500",
    )
    parser.add_argument("--trace", action="store_true", help="print the event trace")
    args = parser.parse_args(argv)
    try:
        scenario_params(args.scenario)
    except ValueError as e:
        print(f"bad scenario: {e}", file=sys.stderr)
        return 2
    result, trace = run_scenario(args.scenario, args.seed, trace=args.trace)
    if args.trace:
        sys.stdout.write("".join(trace))
    record = result.to_dict()
    record.pop("params")
    record["commit_latencies_ms"] = len(result.commit_latencies_ms)
    print(json.dumps(record, sort_keys=True))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

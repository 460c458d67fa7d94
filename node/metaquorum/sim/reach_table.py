"""Print the simulator's reach table: per mix, how often each protocol path and each worst
moment was reached over N seeds (issue 33; docs/sim-reach.md).

Usage: `python -m metaquorum.sim.reach_table [--seeds N] [--first S] [--jobs J] [MIX ...]`
(`make sim-reach SEEDS=N`). Each cell is `count/seeds reached`: the number of times over all
seeds, then in how many seeds it happened at least once; a `0` row is a path no seed of that
mix takes, so a bug planted there cannot be caught by that mix.
Invariant: the counts are those of `run_scenario` (the same seeds reproduce the same table).
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor

from metaquorum.sim.api import run_scenario
from metaquorum.sim.params import MIXES
from metaquorum.sim.reach import MOMENTS, PATHS

Counts = dict[str, tuple[int, int]]  # name -> (times, seeds)


def mix_reach(mix: str, first: int, stop: int) -> tuple[Counts, Counts, int]:
    """(paths, moments, seeds with a violation) over seeds `first`..`stop - 1` of `mix`."""
    paths: Counts = {}
    moments: Counts = {}
    broken = 0
    for seed in range(first, stop):
        result, _ = run_scenario(mix, seed)
        broken += not result.ok
        for into, got in ((paths, result.paths), (moments, result.moments)):
            for name, n in got.items():
                times, seeds = into.get(name, (0, 0))
                into[name] = (times + n, seeds + (n > 0))
    return paths, moments, broken


def table(results: dict[str, tuple[Counts, Counts, int]], seeds: int) -> str:
    mixes = list(results)
    head = "| " + " | ".join(["path or moment", *mixes]) + " |"
    rule = "|" + "---|" * (len(mixes) + 1)
    lines = [head, rule]
    for kind, names in (("paths", PATHS), ("moments", MOMENTS)):
        for name in names:
            cells = []
            for mix in mixes:
                paths, moments, _ = results[mix]
                counts = paths if kind == "paths" else moments
                times, hit = counts.get(name, (0, 0))
                cells.append(f"{times}/{hit}" if times else "**0**")
            label = name if kind == "paths" else f"*{name}*"
            lines.append("| " + " | ".join([label, *cells]) + " |")
    broken = [str(results[m][2]) for m in mixes]
    lines.append("| " + " | ".join(["seeds with a violation", *broken]) + " |")
    return "\n".join([f"{seeds} seeds per mix; cell: times/seeds that reached it", "", *lines])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mixes", nargs="*", default=list(MIXES))
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    stop = args.first + args.seeds
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {m: pool.submit(mix_reach, m, args.first, stop) for m in args.mixes}
        results = {m: f.result() for m, f in futures.items()}
    print(table(results, args.seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

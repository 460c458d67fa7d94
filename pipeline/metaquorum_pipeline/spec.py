"""A campaign spec (YAML) and its expansion into grid cells and seed ranges.

Role: turn the checked-in YAML into the list of (scenario, seeds) the job must cover. A cell's
name is the simulator's scenario name (`chaos+election.timeout.ms=500`, see
`metaquorum.sim.params.scenario_params`), so every record replays with
`python -m metaquorum.sim --seed N --scenario S`.
Invariants: the expansion is deterministic (mixes in spec order, then the grid's cartesian product
in key order, values in the order written; a `sample` keeps a seeded random subset of those cells
in the same order); every cell name parses back to its params; seed
ranges are half-open [start, stop) and a task never holds more than `seeds_per_task` seeds.

    name: smoke                      # a label for the report
    mixes: [calm, chaos]             # metaquorum.sim.params.MIXES
    seeds: {start: 0, count: 100}    # or [start, stop)
    grid:                            # optional; every combination is a cell
      controller.quorum.election.timeout.ms: [500, 1000]
      voters: [3, 5]
    seeds_per_task: 50               # optional; seeds one Spark task runs
    sample: {cells: 20, seed: 1}     # optional: a random sample of the grid's cells instead
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from metaquorum.sim.params import MIXES, canonical_key, scenario_name, scenario_params

DEFAULT_SEEDS_PER_TASK = 50


@dataclass(frozen=True, slots=True)
class Cell:
    scenario: str  # the scenario name: mix plus overrides
    mix: str
    overrides: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Spec:
    name: str
    cells: tuple[Cell, ...]
    seed_start: int
    seed_stop: int
    seeds_per_task: int = DEFAULT_SEEDS_PER_TASK

    @property
    def seeds_per_cell(self) -> int:
        return self.seed_stop - self.seed_start

    @property
    def total_seeds(self) -> int:
        return len(self.cells) * self.seeds_per_cell


class SpecError(ValueError):
    pass


def _seed_range(raw: Any) -> tuple[int, int]:
    if isinstance(raw, dict):
        start = int(raw.get("start", 0))
        if "count" in raw:
            return start, start + int(raw["count"])
        if "stop" in raw:
            return start, int(raw["stop"])
    elif isinstance(raw, list) and len(raw) == 2:
        return int(raw[0]), int(raw[1])
    elif isinstance(raw, int):
        return 0, raw
    raise SpecError(f"seeds: expected {{start, count}}, {{start, stop}}, [start, stop], N: {raw!r}")


def _sample(cells: list[Cell], raw: Any) -> list[Cell]:
    if raw is None:
        return cells
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), int) or raw["cells"] < 1:
        raise SpecError(f"sample: expected {{cells: N, seed: S}} with N >= 1, got {raw!r}")
    if raw["cells"] >= len(cells):
        return cells
    keep = set(random.Random(int(raw.get("seed", 0))).sample(range(len(cells)), raw["cells"]))
    return [c for i, c in enumerate(cells) if i in keep]


def parse(data: Any) -> Spec:
    if not isinstance(data, dict):
        raise SpecError("a campaign spec is a YAML mapping")
    unknown = set(data) - {"name", "mixes", "seeds", "grid", "seeds_per_task", "sample"}
    if unknown:
        raise SpecError(f"unknown spec keys: {sorted(unknown)}")
    mixes = data.get("mixes") or []
    if isinstance(mixes, str):
        mixes = [mixes]
    if not mixes:
        raise SpecError("mixes: name at least one of " + ", ".join(MIXES))
    for mix in mixes:
        if mix not in MIXES:
            raise SpecError(f"unknown mix {mix!r}; use one of: {', '.join(MIXES)}")
    grid = data.get("grid") or {}
    if not isinstance(grid, dict):
        raise SpecError("grid: a mapping of override key to a list of integer values")
    keys: list[str] = []
    values: list[list[int]] = []
    for key, vals in grid.items():
        try:
            keys.append(canonical_key(str(key)))
        except ValueError as e:
            raise SpecError(str(e)) from None
        vals = vals if isinstance(vals, list) else [vals]
        if not vals or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            raise SpecError(f"grid.{key}: a non-empty list of integers, got {vals!r}")
        values.append(vals)
    cells: list[Cell] = []
    for mix in mixes:
        for combo in itertools.product(*values):
            overrides = tuple(zip(keys, combo, strict=True))
            name = scenario_name(mix, dict(overrides))
            try:
                scenario_params(name)
            except ValueError as e:
                raise SpecError(f"cell {name}: {e}") from None
            cells.append(Cell(name, mix, overrides))
    cells = _sample(cells, data.get("sample"))
    start, stop = _seed_range(data.get("seeds", 100))
    if not 0 <= start < stop:
        raise SpecError(f"seeds: need 0 <= start < stop, got [{start}, {stop})")
    per_task = int(data.get("seeds_per_task", DEFAULT_SEEDS_PER_TASK))
    if per_task < 1:
        raise SpecError("seeds_per_task: at least 1")
    return Spec(str(data.get("name", "campaign")), tuple(cells), start, stop, per_task)


def load(path: str | Path) -> Spec:
    return parse(yaml.safe_load(Path(path).read_text()))


def ranges(seeds: Iterable[int]) -> Iterator[tuple[int, int]]:
    """Sorted seeds as maximal half-open runs: [0, 1, 2, 5] -> (0, 3), (5, 6)."""
    run: tuple[int, int] | None = None
    for s in sorted(set(seeds)):
        if run is not None and s == run[1]:
            run = (run[0], s + 1)
            continue
        if run is not None:
            yield run
        run = (s, s + 1)
    if run is not None:
        yield run


Task = tuple[str, int, int]  # (scenario, start, stop): one partition's seeds


def tasks(spec: Spec, done: dict[str, set[int]] | None = None) -> list[Task]:
    """The seeds still to run, as tasks of at most `seeds_per_task` seeds, skipping `done`."""
    done = done or {}
    out: list[Task] = []
    for cell in spec.cells:
        have = done.get(cell.scenario, set())
        todo = (s for s in range(spec.seed_start, spec.seed_stop) if s not in have)
        for start, stop in ranges(todo):
            for lo in range(start, stop, spec.seeds_per_task):
                out.append((cell.scenario, lo, min(lo + spec.seeds_per_task, stop)))
    return out

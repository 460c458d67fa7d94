"""Per-mix digests of the simulator's traces: a reshaping of the core or the simulator must
leave them unchanged (issue 34; and the performance work after it).

`python -m tests.sim.trace_digest --check` (`make sim-digest`, not in `make test`: ~2,400 seeds,
a few minutes on 2 cores) runs seeds [0, N) of every mix in `MIXES` and compares, per mix, the
SHA-256 over the seeds' trace SHA-256s (in seed order) and the total event count with
`tests/sim/trace_digests.txt`; `--write` records new ones after an intended behaviour change
(say which mixes changed, and why, in the commit). Exit code 1 names each mix that differs.

`--against-build DIR` (the `compiled` tier of `make test`, issue 28): the same digests computed
here (the pure-Python package) and in a child process with `PYTHONPATH=DIR` (the compiled build,
scripts/build_compiled.py) must be equal, mix by mix; the child must have run the compiled core
(it names the file `metaquorum.core.node` was loaded from, and that must be an extension module).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from metaquorum.sim.api import run_scenario
from metaquorum.sim.params import MIXES

from tests.pure_build import is_extension

RECORD = Path(__file__).with_name("trace_digests.txt")


def _one(job: tuple[str, int]) -> tuple[str, int, str, int]:
    mix, seed = job
    result, _ = run_scenario(mix, seed)
    return mix, seed, result.trace_sha256, result.events


def digests(seeds: int, workers: int) -> dict[str, str]:
    """`mix -> "seeds N events E digest D"` for seeds [0, `seeds`) of every mix."""
    jobs = [(mix, s) for mix in MIXES for s in range(seeds)]
    runs: dict[str, list[tuple[int, str, int]]] = {mix: [] for mix in MIXES}
    with ProcessPoolExecutor(workers) as pool:
        for mix, seed, sha, events in pool.map(_one, jobs, chunksize=8):
            runs[mix].append((seed, sha, events))
    out = {}
    for mix, rows in runs.items():
        rows.sort()
        digest = hashlib.sha256("".join(sha for _, sha, _ in rows).encode()).hexdigest()
        out[mix] = f"seeds {seeds} events {sum(e for *_, e in rows)} digest {digest}"
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.sim.trace_digest", description=__doc__)
    p.add_argument("--seeds", type=int, default=200)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--write", action="store_true", help="record the digests")
    p.add_argument("--check", action="store_true", help="compare with the record")
    p.add_argument("--against-build", type=Path, help="compare with a child on PYTHONPATH=DIR")
    p.add_argument("--print-build", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.against_build is not None:
        return against_build(a.against_build, a.seeds, a.workers)
    if a.print_build:
        import metaquorum.core.node

        print(f"core {metaquorum.core.node.__file__}")
    got = digests(a.seeds, a.workers)
    text = "".join(f"{mix} {line}\n" for mix, line in got.items())
    if a.write:
        RECORD.write_text(text)
    if not a.check:
        sys.stdout.write(text)
        return 0
    want = dict(line.split(" ", 1) for line in RECORD.read_text().splitlines() if line)
    bad = [m for m in sorted(set(want) | set(got)) if want.get(m) != got.get(m)]
    for mix in bad:
        print(f"{mix}: recorded {want.get(mix)!r}, now {got.get(mix)!r}")
    print(f"trace digests: {len(got) - len(bad)} of {len(got)} mixes unchanged")
    return 1 if bad else 0


def against_build(path: Path, seeds: int, workers: int) -> int:
    env = {**os.environ, "PYTHONPATH": str(path.resolve())}
    argv = [sys.executable, "-m", "tests.sim.trace_digest", "--seeds", str(seeds)]
    argv += ["--workers", str(workers), "--print-build"]
    child = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if child.returncode != 0:
        sys.stderr.write(child.stderr[-3000:])
        print(f"trace digests: the run on {path} failed (exit {child.returncode})")
        return 1
    lines = child.stdout.splitlines()
    core = lines[0].removeprefix("core ") if lines else ""
    if not is_extension(core):
        print(f"trace digests: the run on {path} loaded the core from {core!r}, not compiled")
        return 1
    theirs = dict(line.split(" ", 1) for line in lines[1:] if line)
    ours = digests(seeds, workers)
    bad = [m for m in sorted(set(ours) | set(theirs)) if ours.get(m) != theirs.get(m)]
    for mix in bad:
        print(f"{mix}: this package {ours.get(mix)!r}, {path} {theirs.get(mix)!r}")
    print(
        f"trace digests, seeds 0-{seeds - 1}: {len(ours) - len(bad)} of {len(ours)} mixes "
        f"the same on {path} (core {core}) as on this package"
    )
    return 1 if bad or not ours else 0


if __name__ == "__main__":
    sys.exit(main())

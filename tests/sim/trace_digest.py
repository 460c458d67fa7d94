"""Per-mix digests of the simulator's traces: a reshaping of the core or the simulator must
leave them unchanged (issue 34; and the performance work after it).

`python -m tests.sim.trace_digest --check` (`make sim-digest`, not in `make test`: ~2,400 seeds,
a few minutes on 2 cores) runs seeds [0, N) of every mix in `MIXES` and compares, per mix, the
SHA-256 over the seeds' trace SHA-256s (in seed order) and the total event count with
`tests/sim/trace_digests.txt`; `--write` records new ones after an intended behaviour change
(say which mixes changed, and why, in the commit). Exit code 1 names each mix that differs.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from metaquorum.sim.api import run_scenario
from metaquorum.sim.params import MIXES

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
    a = p.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())

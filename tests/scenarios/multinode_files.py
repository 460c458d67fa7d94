"""Replay and rewrite the multi-node scenario scripts (`tests/scenarios/multinode/*.txt`).

Role: `run_file` runs one script through a fresh `multinode.Env` and compares (or rewrites)
each command's output; `main` is `python -m tests.scenarios.multinode [--rewrite] [file ...]`.
Invariant: a rewrite keeps the comment lines and commands and replaces only the outputs.
"""

from __future__ import annotations

from pathlib import Path

from tests.scenarios.multinode import Env
from tests.scenarios.runner import replay

HERE = Path(__file__).parent / "multinode"


def run_file(path: Path, *, rewrite: bool = False) -> list[str]:
    """Run one multi-node script; return the mismatches (or rewrite it and return none)."""
    return replay(path, Env().run, rewrite=rewrite)


def scripts() -> list[Path]:
    return sorted(HERE.glob("*.txt"))


def main(argv: list[str]) -> int:
    rewrite = "--rewrite" in argv
    paths = [Path(p) for p in argv if p != "--rewrite"] or scripts()
    failures = 0
    for path in paths:
        for problem in run_file(path, rewrite=rewrite):
            failures += 1
            print(problem, end="\n\n")
    return 1 if failures else 0

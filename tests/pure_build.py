"""Test-only: an environment that runs the pure-Python package even when the tier runs on the
compiled build (issue 28, docs/performance.md round 8).

Role: `make test` runs conformance, integration, nemesis-short and pipeline with
`PYTHONPATH=build/compiled` (scripts/build_compiled.py), the tree mypyc compiled. Tests that plant
a bug by replacing a core function at run time (the nemesis's broken node, the pipeline's planted
mutation) need the pure-Python core: a compiled module calls its own functions directly, so a
replaced module attribute is never called. `pure_env` drops every compiled tree (a directory
holding the build's `STAMP` and a `metaquorum` package) from PYTHONPATH; the rest is kept.

Invariant: with no compiled tree on PYTHONPATH the environment is returned unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def is_extension(path: str | None) -> bool:
    """Whether a module's `__file__` is a C extension (the compiled build), not a .py file."""
    return path is not None and path.endswith(".so")


def is_compiled_tree(entry: str) -> bool:
    p = Path(entry)
    return (p / "STAMP").is_file() and (p / "metaquorum").is_dir()


def pure_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the compiled trees removed from its PYTHONPATH (dropped when nothing is left)."""
    out = dict(env)
    path = out.get("PYTHONPATH")
    if path is None:
        return out
    kept = [e for e in path.split(os.pathsep) if e and not is_compiled_tree(e)]
    if kept:
        out["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        del out["PYTHONPATH"]
    return out

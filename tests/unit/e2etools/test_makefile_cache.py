"""The Makefile honours METAQUORUM_CACHE from the environment (every cached build's location).

It used to set METAQUORUM_CACHE from CACHE (default ~/.cache/metaquorum) unconditionally, so
`METAQUORUM_CACHE=/x make cluster` built into and read the shared cache (found by
e2e/tools/cold-cluster.sh, whose cold `make cluster` reused ~/.cache/metaquorum). Oracle: make's
own database (`make -pnq`); CACHE=... on the command line still wins. Under 1 s.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def cache_seen(env_cache: str | None, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("METAQUORUM_CACHE", "CACHE")}
    if env_cache is not None:
        env["METAQUORUM_CACHE"] = env_cache
    out = subprocess.run(["make", "-pnq", "help", *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False).stdout  # fmt: skip
    found = re.findall(r"^METAQUORUM_CACHE := (.*)$", out, re.M)
    assert len(found) == 1, out[-2000:]
    return found[0]


def test_environment_cache_is_used_and_command_line_wins(tmp_path: Path) -> None:
    assert cache_seen(None) == str(Path.home() / ".cache" / "metaquorum")
    assert cache_seen(str(tmp_path / "env")) == str(tmp_path / "env")
    assert cache_seen(str(tmp_path / "env"), f"CACHE={tmp_path / 'cli'}") == str(tmp_path / "cli")

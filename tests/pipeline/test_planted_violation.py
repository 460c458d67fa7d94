"""A bug planted through a simulator mutation hook shows up in the campaign's report, and each
of the report's repro lines reproduces it in a fresh process (issue 17's "must show").

The mutation is the one `tests/sim/test_mutations.py` plants (a follower that ignores a
diverging epoch and never truncates), loaded by a `sitecustomize` module on PYTHONPATH, so it is
in force in the Spark driver, in every Python worker Spark starts, and in the replay process,
and nowhere in the product.
"""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline.conftest import run_cli, write_spec
from tests.pure_build import pure_env

pytestmark = pytest.mark.pipeline

MUTATION = """\
from metaquorum.core import fetch

fetch.truncate_on_divergence = lambda node, diverging: None
"""
SPEC = {
    "name": "planted",
    "mixes": ["calm", "crashes"],
    "seeds": {"start": 0, "count": 16},
    "grid": {"controller.quorum.election.timeout.ms": [1000]},
    "seeds_per_task": 4,
}


def replay(repro: str, env: dict[str, str]) -> tuple[int, dict[str, object]]:
    argv = shlex.split(repro)
    assert argv[:3] == ["python", "-m", "metaquorum.sim"], repro
    done = subprocess.run(
        [sys.executable, *argv[1:]],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return done.returncode, json.loads(done.stdout.splitlines()[-1])


def test_planted_violation_is_reported_with_repro_lines_that_replay_it(tmp_path: Path) -> None:
    mutation = tmp_path / "mutation"
    mutation.mkdir()
    (mutation / "sitecustomize.py").write_text(MUTATION)
    # the mutation replaces a core function: the pure-Python package (tests/pure_build.py)
    pure = pure_env(os.environ).get("PYTHONPATH")
    mutated = {"PYTHONPATH": os.pathsep.join(filter(None, [str(mutation), pure]))}
    spec_file = write_spec(tmp_path / "planted.yaml", **SPEC)
    out = tmp_path / "out"
    done = run_cli(
        "campaign", spec_file, "--out", out, "--master", "local[2]", "--quiet", env=mutated
    )
    assert done.returncode == 1, done.stderr  # exit 1: some seed broke an invariant

    agg = json.loads((out / "aggregates.json").read_text())
    listed = agg["violations"]
    assert agg["violating_seeds"] == len(listed) >= 1
    assert {v["scenario"] for v in listed} == {"crashes+election.timeout.ms=1000"}  # calm passes
    page = (out / "report.html").read_text()
    assert f"{len(listed)} of 32 seeds broke an invariant" in page
    repros = [html.unescape(r) for r in re.findall(r"<code class=repro>([^<]+)</code>", page)]
    assert repros == [v["repro"] for v in listed]

    for v, repro in zip(listed, repros, strict=True):
        assert repro == f"python -m metaquorum.sim --seed {v['seed']} --scenario {v['scenario']}"
        code, record = replay(repro, dict(os.environ, **mutated))
        assert code == 1, repro
        first = record["violations"][0]  # type: ignore[index]
        assert (first["kind"], first["detail"]) == (v["kind"], v["detail"]), repro
    # The control: without the planted bug the first violating seed passes.
    code, record = replay(repros[0], dict(os.environ))
    assert code == 0 and record["violations"] == [], record

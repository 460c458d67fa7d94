"""The nemesis tier's short run (marker `nemesis`; `make nemesis-short`, part of `make test`).

- Several seeds, each a 3-voter quorum in network namespaces under every fault kind the
  harness has (kill -9, pause, isolate, bridge, one-way, loss, slow link, fsync EIO), checked
  by porcupine and the ledger; any violation fails the test and names the run directory and
  the command that re-runs the seed.
- The checker can fail: the same harness against a deliberately broken node (injected from
  the test: tests/nemesis/broken_node.py) reports the violation, and porcupine's
  visualisation is kept in the run directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.nemesis.nemesis import KINDS
from tests.nemesis.run import run

pytestmark = [pytest.mark.nemesis, pytest.mark.timeout(300)]

SEEDS = [int(s) for s in os.environ.get("NEMESIS_SEEDS", "101,202,303").split(",")]
DURATION_S = float(os.environ.get("NEMESIS_DURATION_S", "40"))
BASE = Path(os.environ.get("METAQUORUM_NEMESIS_DIR", os.environ.get("TMPDIR", "/tmp")))


def _why(s: dict[str, object]) -> str:
    keys = ("porcupine", "ledger", "findings", "recovery", "faults_injected", "dir", "rerun")
    return "; ".join(f"{k}: {s.get(k)}" for k in keys)


@pytest.mark.parametrize("seed", SEEDS)
def test_no_violation_under_faults(seed: int) -> None:
    s = run(seed, DURATION_S, KINDS, base=BASE / "metaquorum-nemesis")
    assert s["ok"], _why(s)
    assert s["porcupine"]["result"] == "Ok" and s["porcupine"]["appends_ok"] > 100, _why(s)
    assert sum(s["faults_injected"].values()) >= 5, _why(s)


def test_every_fault_kind_is_injected_across_the_seeds() -> None:
    from tests.nemesis.nemesis import schedule

    kinds = {f.kind for seed in SEEDS for f in schedule(seed, DURATION_S)}
    assert kinds == set(KINDS)


@pytest.mark.parametrize(
    ("broken", "scenario"),
    [("ack-before-majority", "isolate-leader"), ("stale-read", "isolate-leader")],
)
def test_the_checker_catches_a_broken_node(broken: str, scenario: str) -> None:
    s = run(
        1,
        14,
        KINDS,
        broken=broken,
        scenario=scenario,
        base=BASE / "metaquorum-nemesis-broken",
        converge_s=20,
    )
    assert not s["ok"], f"the broken node ({broken}) was not caught: {_why(s)}"
    assert s["porcupine"]["result"] == "Illegal", _why(s)
    html = Path(str(s["porcupine"].get("visualization", "")))
    assert html.is_file() and html.stat().st_size > 10_000, _why(s)
    if broken == "ack-before-majority":
        assert any("acknowledged append" in v for v in s["ledger"]), _why(s)

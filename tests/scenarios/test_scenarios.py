"""Every scenario script under tests/scenarios replays to exactly its recorded transcript."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.scenarios.runner import HERE, run_file

SCRIPTS = sorted(HERE.glob("*.txt"))


def test_there_are_scenarios() -> None:
    assert len(SCRIPTS) >= 6


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_scenario(path: Path) -> None:
    problems = run_file(path, rewrite=os.environ.get("METAQUORUM_REWRITE") == "1")
    assert not problems, "\n\n".join(problems)

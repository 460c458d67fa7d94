"""Every multi-node script under tests/scenarios/multinode replays to exactly its transcript.

The scripts (tests/scenarios/multinode.py) drive several RaftNodes through their public API
only; a changed effect, message or state line anywhere in a transcript fails here.
Regenerate with `python -m tests.scenarios.runner --rewrite` or METAQUORUM_REWRITE=1.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.scenarios.multinode import Env
from tests.scenarios.multinode_files import HERE, run_file, scripts

SCRIPTS = scripts()


def test_there_are_multinode_scenarios() -> None:
    names = {p.stem for p in SCRIPTS}
    assert {"election_prevote", "add_voter_lagging", "remove_leader"} <= names


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_multinode_scenario(path: Path) -> None:
    problems = run_file(path, rewrite=os.environ.get("METAQUORUM_REWRITE") == "1")
    assert not problems, "\n\n".join(problems)


def test_a_changed_expectation_fails(tmp_path: Path) -> None:
    """The check can fail: one altered effect line in a copy of a transcript is reported."""
    script = HERE / "election_prevote.txt"
    original = script.read_text()
    needle = "persist epoch=1 leader=-1 voted=1"
    assert needle in original
    broken = tmp_path / script.name
    broken.write_text(original.replace(needle, "persist epoch=1 leader=-1 voted=2", 1))
    problems = run_file(broken)
    assert len(problems) == 1
    assert "voted=2" in problems[0] and "voted=1" in problems[0]


def test_the_same_script_gives_the_same_transcript() -> None:
    """Deterministic: two environments fed the same commands print the same lines."""
    commands = ["add-replicas ids=1,2,3 initial-controllers=1,2,3", "timeout", "stabilize"]
    first, second = Env(), Env()
    assert [first.run(c) for c in commands] == [second.run(c) for c in commands]


def test_the_driver_refuses_an_unknown_command() -> None:
    with pytest.raises(ValueError, match="unknown command"):
        Env().run("campaign id=1")

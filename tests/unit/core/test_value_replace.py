"""`core.value.replace`, the core's fast `dataclasses.replace` (issue 28; performance.md round 4).

At run time one compiled function per class; it must give what `dataclasses.replace` gives
(every field not named copied, `__post_init__` run, `init=False` fields kept), refuse what it
refuses, and to mypy it is `dataclasses.replace` (a wrong field name is a type error).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.states import FollowerState, Role, UnattachedState
from metaquorum.core.value import replace
from metaquorum.core.voter_set import VoterNode, VoterSet
from metaquorum.protocol.messages import FetchRequestData

REPO = Path(__file__).resolve().parents[3]


def test_replace_gives_what_dataclasses_replace_gives() -> None:
    st = FollowerState(4, 2, 100, voted_key=ReplicaKey(2, "dir"), high_watermark=7)
    for changes in ({}, {"fetch_deadline_ms": 9}, {"high_watermark": None, "has_fetched": True}):
        got = replace(st, **changes)
        assert got == dataclasses.replace(st, **changes)
        assert got is not st and type(got) is FollowerState
    un = replace(UnattachedState(3, 50, leader_id=1), epoch=4)
    assert (un.epoch, un.election_deadline_ms, un.leader_id, un.role) == (4, 50, 1, Role.UNATTACHED)
    # Any dataclass, not only the core's: a generated message too.
    assert replace(FetchRequestData(replica_id=2), max_wait_ms=5) == dataclasses.replace(
        FetchRequestData(replica_id=2), max_wait_ms=5
    )


def test_replace_runs_post_init_and_refuses_unknown_and_init_false_fields() -> None:
    voters = VoterSet.from_nodes([VoterNode(ReplicaKey(1)), VoterNode(ReplicaKey(2))])
    with pytest.raises(ValueError, match="exactly its voter ids"):
        replace(voters, voter_ids=frozenset({1, 2, 3}))
    st = UnattachedState(3, 50)
    with pytest.raises(TypeError, match="role"):
        replace(st, role=Role.LEADER)
    with pytest.raises(TypeError, match="bogus"):
        replace(st, bogus=1)  # type: ignore[call-arg]


@pytest.mark.slow
def test_mypy_checks_replace_calls_as_dataclasses_replace(tmp_path: Path) -> None:
    from mypy import api

    snippet = tmp_path / "replace_calls.py"
    snippet.write_text(
        "from metaquorum.core.states import UnattachedState\n"
        "from metaquorum.core.value import replace\n"
        "st = UnattachedState(3, 50)\n"
        "ok = replace(st, epoch=4)\n"
        "bad_name = replace(st, epock=4)\n"
        "bad_type = replace(st, epoch='4')\n"
    )
    out, err, status = api.run(
        ["--config-file", str(REPO / "pyproject.toml"), "--no-incremental", str(snippet)]
    )
    assert status == 1, out + err
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 2, out
    assert "replace_calls.py:5:" in errors[0] and "epock" in errors[0], out
    assert "replace_calls.py:6:" in errors[1], out

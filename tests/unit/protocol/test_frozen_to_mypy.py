"""Messages (`_codec.struct`) and the core's value classes (`core.value`) are frozen to mypy.

At run time they are plain slotted dataclasses (a frozen `__init__` is 3.4x slower,
docs/performance.md round 3), so immutability rests on the type checker: this test shows mypy
still refuses a field assignment on each kind, and that the run-time classes keep what a frozen
dataclass gave (equality; the core's hash by fields).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from metaquorum.core.events import RequestReceived
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.states import UnattachedState
from metaquorum.protocol.messages import FetchRequestData
from metaquorum.protocol.types import Uuid

REPO = Path(__file__).resolve().parents[3]

SNIPPET = """
from metaquorum.core.events import RequestReceived
from metaquorum.core.states import UnattachedState
from metaquorum.protocol.messages import FetchRequestData

m = FetchRequestData()
m.replica_id = 3
p = FetchRequestData.FetchPartition()
p.fetch_offset = 9
e = RequestReceived(1, 2, m)
e.source = 4
"""


@pytest.mark.slow
def test_mypy_refuses_assigning_a_field_of_a_message_or_a_core_value(tmp_path: Path) -> None:
    from mypy import api

    snippet = tmp_path / "assign_fields.py"
    snippet.write_text(SNIPPET)
    out, err, status = api.run(
        ["--config-file", str(REPO / "pyproject.toml"), "--no-incremental", str(snippet)]
    )
    assert status == 1, out + err
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 3, out
    for line in ("replica_id", "fetch_offset", "source"):
        assert any(line in e and "read-only" in e for e in errors), out


def test_run_time_classes_keep_equality_and_the_cores_keep_a_field_hash() -> None:
    assert FetchRequestData(replica_id=2) == FetchRequestData(replica_id=2)
    assert FetchRequestData(replica_id=2) != FetchRequestData(replica_id=3)
    assert dataclasses.replace(FetchRequestData(), replica_id=5).replica_id == 5
    key = ReplicaKey(1, str(Uuid(0, 7)))
    assert hash(key) == hash(ReplicaKey(1, str(Uuid(0, 7))))
    assert {key: 1}[ReplicaKey(1, str(Uuid(0, 7)))] == 1
    assert UnattachedState(3, 100) == UnattachedState(3, 100) != UnattachedState(3, 101)
    assert RequestReceived(1, 2, "m") == RequestReceived(1, 2, "m")

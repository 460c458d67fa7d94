"""LocalQuorum's timeout message names a node that does not answer /status: whether its process
exited, with what code, and its log's tail (a CI failure showed only `None` for a dead node)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from metaquorum.runtime.local_quorum import LocalQuorum


def test_unanswered_names_an_exited_node_and_its_log(tmp_path: Path) -> None:
    q = LocalQuorum(tmp_path, 1)
    node = q.nodes[1]
    node.log_path.parent.mkdir(parents=True, exist_ok=True)
    with node.log_path.open("wb") as log:
        node.process = subprocess.Popen(
            [sys.executable, "-c", "print('bind failed: address in use'); raise SystemExit(3)"],
            stdout=log,
        )
    node.process.wait(10)
    text = q.unanswered()
    assert "node 1: exited rc=3" in text
    assert "bind failed: address in use" in text
    try:
        q.wait_for_leader(0.1)
    except TimeoutError as e:
        assert "exited rc=3" in str(e)
    else:
        raise AssertionError("no leader expected")


def test_unanswered_is_empty_for_unstarted_nodes(tmp_path: Path) -> None:
    assert LocalQuorum(tmp_path, 3).unanswered() == ""

"""A slow failover keeps each node's log from the kill on (bench/workloads._keep_logs)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from bench.workloads import _keep_logs


def test_the_logs_after_the_mark_are_kept(tmp_path: Path) -> None:
    nodes = {}
    for i in (1, 2):
        log = tmp_path / f"node-{i}.log"
        log.write_bytes(b"before the kill\n" + f"after {i}\n".encode())
        nodes[i] = SimpleNamespace(log_path=log)
    c = SimpleNamespace(quorum=SimpleNamespace(base=tmp_path, nodes=nodes))
    marks = {1: len(b"before the kill\n"), 2: 0}
    kept = _keep_logs(cast(Any, c), marks, "sigkill-3", 105.5, 100.0)
    out = Path(kept["logs"])
    assert out == tmp_path / "slow-failover-sigkill-3" and kept["ms"] == 5500.0
    assert (out / "node-1.log").read_bytes() == b"after 1\n"
    assert (out / "node-2.log").read_bytes() == b"before the kill\nafter 2\n"
    assert _keep_logs(cast(Any, c), marks, "sigkill-4", None, 100.0)["ms"] is None

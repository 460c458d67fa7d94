"""A slow failover keeps each node's log from the kill on (bench/workloads._keep_logs), in the
bench's output directory: the work directory is wiped by the next run (it was, in stop 41's
session, before anyone read a 5 s failover's logs)."""

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
    work = tmp_path / "work"  # the cluster's directory: the next bench run wipes it
    c = SimpleNamespace(quorum=SimpleNamespace(base=work, nodes=nodes))
    marks = {1: len(b"before the kill\n"), 2: 0}
    keep = tmp_path / "out" / "slow-failovers-20261202T065541Z" / "sigkill-3"
    kept = _keep_logs(cast(Any, c), marks, keep, 105.5, 100.0)
    out = Path(kept["logs"])
    assert out == keep and kept["ms"] == 5500.0
    assert not work.exists()  # nothing kept where the next run deletes it
    assert (out / "node-1.log").read_bytes() == b"after 1\n"
    assert (out / "node-2.log").read_bytes() == b"before the kill\nafter 2\n"
    assert _keep_logs(cast(Any, c), marks, tmp_path / "k4", None, 100.0)["ms"] is None

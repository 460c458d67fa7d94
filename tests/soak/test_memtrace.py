"""The soak's memory diagnostics (tests/soak/memtrace/): a process named like a node dumps
allocator statistics and tracemalloc snapshots, memdiff compares them; other processes and
processes without the variable are left alone. Integration tier (subprocesses that wait for
dumps): about 15 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.soak import memdiff

pytestmark = pytest.mark.integration

HOOK = Path(__file__).parent / "memtrace"
# Waits for a first dump, grows a list by ~1 MiB, waits for two more dumps (or gives up after
# 60 s: a process without the hook writes none).
CHILD = """
import glob, sys, time
out, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
def dumps():
    return len(glob.glob(out + "/*.json"))
while dumps() < 1 and time.monotonic() < deadline:
    time.sleep(0.05)
kept = [b"x" * 40000 for _ in range(25)]
seen = dumps()
while dumps() < seen + 2 and time.monotonic() < deadline:  # +1 may have begun before
    time.sleep(0.05)
"""


def _run(tmp_path: Path, wait_s: float, name: str, **env: str) -> None:
    subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), str(wait_s), name],
        env={**os.environ, "PYTHONPATH": str(HOOK), **env},
        check=True,
        timeout=30,
    )


def _node(out: Path, frames: int) -> list[dict[str, Any]]:
    out.mkdir()
    _run(
        out,
        60,
        "metaquorum.cli.server_cmd",
        METAQUORUM_SOAK_MEMTRACE=str(out),
        METAQUORUM_SOAK_MEMTRACE_EVERY="1",
        METAQUORUM_SOAK_MEMTRACE_FRAMES=str(frames),
    )
    stats = sorted(out.glob("*.json"))
    assert len(stats) >= 2, stats  # not 60 s without a dump
    return [json.loads(f.read_text()) for f in stats]


def test_a_node_process_dumps_allocator_statistics(tmp_path: Path) -> None:
    row = _node(tmp_path / "stats", 0)[-1]
    for key in (
        "rss",
        "RssAnon",
        "glibc_uordblks",
        "glibc_fordblks",
        "pymalloc bytes in allocated blocks",  # pymalloc's own counts: without tracemalloc
        "pymalloc arenas allocated current",
    ):
        assert row[key] > 0, key
    assert row["types"]["list"] > 0 and row["traced"] == 0


def test_tracemalloc_snapshots_that_memdiff_compares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _node(tmp_path / "trace", 2)
    assert rows[-1]["traced"] > 1_000_000  # the list's 1 MiB, at least
    pid = next((tmp_path / "trace").glob("*.tracemalloc")).name.split("-")[0]
    assert memdiff.main([str(tmp_path / "trace"), pid, "--first", "0", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert f"pid {pid}" in out and "gc-tracked objects" in out
    # the list's bytes objects were allocated between the first and the last snapshot
    assert "<string>" in out, out


def test_nothing_is_written_without_the_variable_or_by_other_processes(tmp_path: Path) -> None:
    # 3.5 s: a node would have written its first dump at 3 s
    _run(
        tmp_path,
        3.5,
        "something-else",
        METAQUORUM_SOAK_MEMTRACE=str(tmp_path),
        METAQUORUM_SOAK_MEMTRACE_EVERY="1",
    )
    _run(tmp_path, 3.5, "metaquorum.cli.server_cmd", METAQUORUM_SOAK_MEMTRACE_EVERY="1")
    assert list(tmp_path.iterdir()) == []

"""Test-only: how the nemesis starts a node — the real `server start`, with two test seams
set up in this process only (nothing in the product changes).

Role:
- the clock seam (`MQ_NEMESIS_CLOCK_FILE`): `time.time` (the wall clock) gets an offset in ms
  read from that file (re-read when it changes, checked every 50 ms), so the nemesis can step
  one node's wall clock forward or back while it runs, as NTP would; `time.monotonic` is left
  alone;
- a deliberately broken node (`MQ_NEMESIS_BROKEN`), to show the checker can fail:
  `ack-before-majority`: the leader's high watermark is its own flushed end offset (the
  largest, not the majority's), so a Produce is acknowledged once on the leader's disk only,
  before any follower has it: an isolated leader keeps acknowledging appends that the next
  leader never saw, and they are lost;
  `stale-read`: the leader serves consumer Fetches without its read lease or read index, so a
  leader cut off from the quorum (deposed, not yet aware) answers reads with a stale HW.
Invariant: with neither variable set this is exactly `python -m metaquorum.cli.server_cmd`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import metaquorum.core.high_watermark as hwm
from metaquorum.cli import server_cmd
from metaquorum.core.node import RaftNode
from metaquorum.core.states import LeaderState


class _Offset:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.ms = 0
        self.checked = 0.0
        self.mtime = 0

    def get(self) -> int:
        now = time.monotonic()
        if now - self.checked >= 0.05:
            self.checked = now
            try:
                st = self.path.stat()
                if st.st_mtime_ns != self.mtime:
                    self.mtime = st.st_mtime_ns
                    self.ms = int(self.path.read_text().strip() or 0)
            except (OSError, ValueError):
                pass
        return self.ms


def _own_offset_is_committed(
    voter_offsets: Mapping[int, int | None], epoch_start_offset: int, current: int | None
) -> int | None:
    best = max((-1 if o is None else o for o in voter_offsets.values()), default=-1)
    if best <= epoch_start_offset or (current is not None and best <= current):
        return current
    return best


def _lease_always_held(self: RaftNode, now_ms: int) -> bool:
    return isinstance(self.state, LeaderState)


def _reads_always_confirmed(self: RaftNode, epoch: int, seq: int) -> bool:
    return isinstance(self.state, LeaderState)


def patch(broken: str | None, clock_file: str | None) -> None:
    if clock_file:
        offset = _Offset(Path(clock_file))
        real_time = time.time
        # A wall-clock step as NTP makes one: time.time moves, time.monotonic does not.
        time.time = lambda: real_time() + offset.get() / 1000
    if broken == "ack-before-majority":
        hwm.compute_high_watermark = _own_offset_is_committed  # type: ignore[assignment]
    elif broken == "stale-read":
        RaftNode.holds_read_lease = _lease_always_held  # type: ignore[method-assign]
        RaftNode.reads_confirmed_after = _reads_always_confirmed  # type: ignore[method-assign]
    elif broken:
        raise SystemExit(f"MQ_NEMESIS_BROKEN={broken!r}: ack-before-majority or stale-read")


if __name__ == "__main__":
    patch(os.environ.get("MQ_NEMESIS_BROKEN"), os.environ.get("MQ_NEMESIS_CLOCK_FILE"))
    parser = argparse.ArgumentParser(prog="metaquorum")
    server_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["server", *sys.argv[1:]])
    sys.exit(args.func(args))

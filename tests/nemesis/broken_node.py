"""Test-only: a deliberately broken node, to show the checker can fail (issue 18).

Role: started by the nemesis instead of `metaquorum.cli.server_cmd` when
`MQ_NEMESIS_BROKEN` is set; it patches the product in this process only, then runs the real
`server start`. Nothing in the product changes. Modes:
- `ack-before-majority`: the leader's high watermark is its own flushed end offset (the
  largest, not the majority's), so a Produce is acknowledged once on the leader's disk only,
  before any follower has it: an isolated leader keeps acknowledging appends that the next
  leader never saw, and they are lost.
- `stale-read`: the leader serves consumer Fetches without its read lease, so a leader cut off
  from the quorum (deposed, not yet aware) answers reads with a stale high watermark.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

import metaquorum.core.high_watermark as hwm
from metaquorum.cli import server_cmd
from metaquorum.core.node import RaftNode
from metaquorum.core.states import LeaderState


def _own_offset_is_committed(
    voter_offsets: Mapping[int, int | None], epoch_start_offset: int, current: int | None
) -> int | None:
    best = max((-1 if o is None else o for o in voter_offsets.values()), default=-1)
    if best <= epoch_start_offset or (current is not None and best <= current):
        return current
    return best


def _lease_always_held(self: RaftNode, now_ms: int) -> bool:
    return isinstance(self.state, LeaderState)


def patch(mode: str) -> None:
    if mode == "ack-before-majority":
        hwm.compute_high_watermark = _own_offset_is_committed  # type: ignore[assignment]
    elif mode == "stale-read":
        RaftNode.holds_read_lease = _lease_always_held  # type: ignore[method-assign]
    else:
        raise SystemExit(f"MQ_NEMESIS_BROKEN={mode!r}: ack-before-majority or stale-read")


if __name__ == "__main__":
    patch(os.environ["MQ_NEMESIS_BROKEN"])
    parser = argparse.ArgumentParser(prog="metaquorum")
    server_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["server", *sys.argv[1:]])
    sys.exit(args.func(args))

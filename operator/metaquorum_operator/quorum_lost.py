"""Lost majority: detect that a majority of the voters is gone, so the operator stops (issue 31).

Role: when no leader answers DescribeQuorum, the operator asks each pod's node for its own view
(HTTP GET /status: survey.py) and `lost_majority` decides, purely, whether a majority of the
current voters is unreachable or came back empty. The planner (rule 0b) then returns
`QuorumLost` naming them and does nothing else — no object written, no pod deleted, no voter
changed — until the quorum has a leader again or a human recovers it
(`metaquorum storage recover` on a survivor: docs/backup.md, docs/operator.md "Lost majority").

How it decides:
- the current voters are the voter set of the most advanced reachable node that is not empty
  (highest log end epoch, then offset): a survivor's log holds the latest VotersRecord it saw,
  the newest committed voter set or one step ahead of it; with no such node nothing is known
  and nothing is claimed (the pods may all be starting);
- a voter **came back empty** when its pod's node answers with an empty log (log end offset 0,
  no snapshot): its volume was re-created and formatted --no-initial-controllers, as the format
  init container does for a pod of a formed quorum, so whatever it held is gone; or when that
  node runs a directory id other than the voter's in the witness's voter set (KIP-853: a new
  volume is a new directory). The second catches a replacement that copied the log as an
  observer while a survivor briefly led (on the real kubelet: the survivor won the election
  with the vote of the second victim before its pod went, the empty replacement fetched from
  it, then the leader resigned; the replacement's log was no longer empty, yet it is not the
  voter, and the quorum sat leaderless with QuorumIntact). A node that reports no voter keys
  (older software) is judged by its log alone;
- a voter is **unreachable** when its pod does not exist, or its node does not answer /status;
- a majority lost (more than half of the voters empty or unreachable) is `QuorumLost`. A voter
  set of which a majority is unreachable but none is empty may come back by itself (pods
  rescheduling, nodes rebooting): the condition then says so and clears as soon as a leader
  answers; empty voters never come back by themselves.

Invariants: pure; never claims a loss without a survivor's voter set; `formed_by_survey` lets
the planner keep a formed quorum formed (no pod formats --standalone) whenever some node holds a
voter set, even if the ConfigMap that records it was lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from metaquorum_operator.observed import ObservedPod


@dataclass(frozen=True, slots=True)
class NodeView:
    """What one pod's node says about itself on GET /status; `reachable` False when it did not
    answer (then the other fields are meaningless)."""

    ordinal: int
    reachable: bool
    log_end_offset: int = 0
    log_end_epoch: int = 0
    has_snapshot: bool = False
    voters: tuple[int, ...] = ()
    leader_id: int = -1
    epoch: int = 0
    directory_id: str | None = None  # this node's own (meta.properties)
    # (voter id, directory id) for each voter of `voters` whose directory id the log names
    voter_directories: tuple[tuple[int, str], ...] = ()

    @property
    def empty(self) -> bool:
        return self.reachable and self.log_end_offset == 0 and not self.has_snapshot

    def replaced(self, witness: NodeView) -> bool:
        """This node runs a directory other than its voter's in `witness`'s voter set."""
        known = dict(witness.voter_directories).get(self.ordinal)
        return known is not None and self.directory_id is not None and self.directory_id != known


@dataclass(frozen=True, slots=True)
class LostMajority:
    voters: tuple[int, ...]
    empty: tuple[int, ...]
    unreachable: tuple[int, ...]
    survivors: tuple[int, ...]
    witness: int  # the node whose voter set was used

    @property
    def reason(self) -> str:
        parts = []
        if self.empty:
            parts.append(f"came back empty: {', '.join(map(str, self.empty))}")
        if self.unreachable:
            parts.append(f"unreachable: {', '.join(map(str, self.unreachable))}")
        alive = ", ".join(map(str, self.survivors)) or "none"
        lost = len(self.empty) + len(self.unreachable)
        return (
            f"quorum lost: {lost} of {len(self.voters)} voters "
            f"({', '.join(map(str, self.voters))}, as node {self.witness} knows them) "
            f"{'; '.join(parts)}; survivors: {alive}. The operator changes nothing until a "
            "leader is back; recovering from the survivors loses what only the lost voters "
            "held (docs/operator.md, Lost majority)"
        )


def _witness(views: Sequence[NodeView]) -> NodeView | None:
    """The most advanced reachable non-empty node that knows a voter set, or None."""
    alive = [v for v in views if v.reachable and not v.empty and v.voters]
    if not alive:
        return None
    return max(alive, key=lambda v: (v.log_end_epoch, v.log_end_offset, -v.ordinal))


def known_voters(views: Sequence[NodeView]) -> tuple[int, tuple[int, ...]] | None:
    """(witness, voter ids) from the most advanced reachable non-empty node, or None."""
    best = _witness(views)
    return None if best is None else (best.ordinal, tuple(sorted(best.voters)))


def formed_by_survey(views: Sequence[NodeView]) -> bool:
    return known_voters(views) is not None


def lost_majority(pods: Sequence[ObservedPod], views: Sequence[NodeView]) -> LostMajority | None:
    """The lost majority, when the voters neither empty nor unreachable are too few to elect a
    leader (fewer than len // 2 + 1): two of three, one of two (a voter set the disk-loss rule had
    just shrunk when the second voter's disk went), two of four."""
    best = _witness(views)
    if best is None:
        return None
    witness, voters = best.ordinal, tuple(sorted(best.voters))
    live = {p.ordinal for p in pods if not p.terminating}
    by_id = {v.ordinal: v for v in views}
    empty: list[int] = []
    unreachable: list[int] = []
    for vid in voters:
        view = by_id.get(vid)
        if vid not in live or view is None or not view.reachable:
            unreachable.append(vid)
        elif view.empty or view.replaced(best):
            empty.append(vid)
    lost = len(empty) + len(unreachable)
    if len(voters) - lost > len(voters) // 2:
        return None
    survivors = tuple(v for v in voters if v not in empty and v not in unreachable)
    return LostMajority(voters, tuple(empty), tuple(unreachable), survivors, witness)

"""Quorum reasoning for KIP-853 voter changes: who is caught up, which change is safe, and the
progress the operator carries between reconciles.

Role: pure helpers of the planner. `caught_up` reads the leader's DescribeQuorum view of one
replica (log end offset and last caught-up time against the leader's own); `safe_voter_set` is the
quorum rule every voter change and every pod deletion must pass; `Progress` is the little the
operator remembers (a voter change it issued and has not seen committed, since when each replica
has been caught up), and `advance` moves it forward with each new observation.

Invariants:
- A replica is caught up when its log end offset is within `max_lag_records` of the leader's and
  the leader saw it caught up within `max_lag_ms` (Kafka's controller.quorum.fetch.timeout.ms,
  2 s, the bound Strimzi's KafkaQuorumCheck uses); the leader is always caught up; unknown
  progress (-1) is never caught up.
- A voter set is safe when more than half of its members are caught up: a change that leaves
  fewer would leave a committed set unable to commit (KIP-853: the new set takes effect when the
  leader appends it, so the new set's majority must be there to commit it).
- A pending change is done when its acknowledgement came back (AddRaftVoter / RemoveRaftVoter
  answer only once the VotersRecord is committed), or when the voter set reflects it and the high
  watermark has passed the leader's log end offset of the first observation that reflected it
  (so an operator restarted mid-change learns the commit from the live quorum alone).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from metaquorum_operator.observed import ObservedQuorum, ReplicaState, VoterKey

ChangeKind = Literal["add", "remove"]


@dataclass(frozen=True, slots=True)
class CatchUp:
    """When a replica counts as caught up, and how long an observer must stay caught up before
    it is added as a voter."""

    max_lag_records: int = 100
    max_lag_ms: int = 2000
    hold_ms: int = 3000
    # A change issued but never seen in the voter set is forgotten after this long (the RPC was
    # lost and the planner may choose again).
    pending_timeout_ms: int = 60_000
    # A voter not caught up for this long (a pod lost and not rejoining) makes the resource
    # Degraded, with a Warning Event.
    rejoin_bound_ms: int = 30_000
    # A leader asked to resign (a roll's leader last) that still leads that epoch this long
    # after is rolled anyway: its pod is deleted and the node's SIGTERM hand-over resigns it.
    resign_timeout_ms: int = 10_000
    # A pod whose PVC has waited this long in FileSystemResizePending (the driver grows the
    # filesystem only when the volume is mounted again) is restarted, leader last. A driver
    # with online expansion clears the condition within seconds, so it never rolls there.
    fs_resize_grace_ms: int = 60_000


@dataclass(frozen=True, slots=True)
class PendingChange:
    """A voter change the operator issued. `reflected_at` is the leader's log end offset when the
    voter set first showed it (-1: not yet seen)."""

    kind: ChangeKind
    key: VoterKey
    issued_ms: int
    reflected_at: int = -1

    def reflected(self, quorum: ObservedQuorum) -> bool:
        present = self.key in quorum.voter_keys()
        return present if self.kind == "add" else not present


@dataclass(frozen=True, slots=True)
class Progress:
    """What the planner knows beyond one observation: the clock, a pending change, since when
    (operator clock, ms) each replica has been caught up without a break, since when each
    voter has not been, the last leader asked to resign as (node id, epoch, asked at ms), and
    the pods (uids) a manual roll of the whole quorum still has to restart (None: no roll
    started; empty: done, the annotation being removed)."""

    now_ms: int = 0
    pending: PendingChange | None = None
    caught_up_since: Mapping[VoterKey, int] = field(default_factory=dict)
    lagging_since: Mapping[VoterKey, int] = field(default_factory=dict)
    resign_asked: tuple[int, int, int] | None = None
    manual_roll: frozenset[str] | None = None

    def lagging_longer_than(self, bound_ms: int) -> list[VoterKey]:
        return sorted(k for k, t in self.lagging_since.items() if self.now_ms - t >= bound_ms)


def lag(replica: ReplicaState, quorum: ObservedQuorum) -> int | None:
    """Records behind the leader's log end offset (None when unknown)."""
    leader = quorum.leader()
    if leader is None or leader.log_end_offset < 0 or replica.log_end_offset < 0:
        return None
    return max(0, leader.log_end_offset - replica.log_end_offset)


def caught_up(replica: ReplicaState, quorum: ObservedQuorum, settings: CatchUp) -> bool:
    if not quorum.has_leader:
        return False
    if replica.id == quorum.leader_id and replica.key in quorum.voter_keys():
        return True
    leader = quorum.leader()
    behind = lag(replica, quorum)
    if leader is None or behind is None or replica.last_caught_up_ms < 0:
        return False
    stale_ms = leader.last_caught_up_ms - replica.last_caught_up_ms
    return behind <= settings.max_lag_records and stale_ms <= settings.max_lag_ms


def healthy_keys(quorum: ObservedQuorum, settings: CatchUp) -> frozenset[VoterKey]:
    return frozenset(
        r.key for r in (*quorum.voters, *quorum.observers) if caught_up(r, quorum, settings)
    )


def safe_voter_set(voters: Iterable[VoterKey], healthy: frozenset[VoterKey]) -> bool:
    """More than half of `voters` caught up (an empty set is never safe)."""
    members = set(voters)
    return bool(members) and 2 * len(members & healthy) > len(members)


def advance(
    progress: Progress, quorum: ObservedQuorum | None, now_ms: int, settings: CatchUp
) -> Progress:
    """The progress after one more observation at `now_ms`."""
    if quorum is None or not quorum.has_leader:
        # Nothing learned; caught-up streaks break (no leader vouches for them).
        return replace(progress, now_ms=now_ms, caught_up_since={})
    healthy = healthy_keys(quorum, settings)
    since = {k: progress.caught_up_since.get(k, now_ms) for k in healthy}
    lagging = {
        k: progress.lagging_since.get(k, now_ms) for k in quorum.voter_keys() if k not in healthy
    }
    pending = progress.pending
    if pending is not None:
        leader = quorum.leader()
        leo = leader.log_end_offset if leader is not None else -1
        if not pending.reflected(quorum):
            pending = replace(pending, reflected_at=-1)  # e.g. a new leader truncated it
            if now_ms - pending.issued_ms > settings.pending_timeout_ms:
                pending = None
        elif pending.reflected_at < 0:
            pending = replace(pending, reflected_at=leo)
        elif quorum.high_watermark >= pending.reflected_at:
            pending = None  # committed
    return replace(  # the rest (resign_asked, manual_roll) carried over
        progress,
        now_ms=now_ms,
        pending=pending,
        caught_up_since=since,
        lagging_since=lagging,
    )


def held(progress: Progress, key: VoterKey, settings: CatchUp) -> bool:
    """Whether `key` has been caught up for at least settings.hold_ms."""
    since = progress.caught_up_since.get(key)
    return since is not None and progress.now_ms - since >= settings.hold_ms

"""The leader's replication progress and high watermark (KIP-595 §Fetch, Kafka `LeaderState`).

Role: track, per replica, the offset it has acknowledged (a voter's Fetch offset, which it
only sends after flushing everything below it; the leader's own *flushed* end offset), its
last fetch and caught-up times (DescribeQuorum, KIP-836), and compute the high watermark.
Observers that have not fetched for `OBSERVER_SESSION_TIMEOUT_MS` are forgotten. Voters are
tracked by id (the voter set fixes their directory ids); observers by replica key (KIP-853), so
a replica with a voter's id but another directory id (a wiped disk) is an observer and never
counts toward the HW.

Invariants (checked by tests against a naive oracle):
- HW = the largest offset acknowledged by a majority of voters (`compute_high_watermark`);
- no HW is exposed until it exceeds the epoch start offset, i.e. until the LeaderChange record
  that opens the leader's epoch is committed (KIP-595; KAFKA-12619's off-by-one);
- the HW never decreases within a leader's term.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from metaquorum.core.ids import ReplicaKey

OBSERVER_SESSION_TIMEOUT_MS = 300_000  # Kafka's LeaderState.OBSERVER_SESSION_TIMEOUT_MS


def compute_high_watermark(
    voter_offsets: Mapping[int, int | None],
    epoch_start_offset: int,
    current: int | None,
) -> int | None:
    """Kafka's `maybeUpdateHighWatermark`: the new HW, or `current` when it does not move."""
    if not voter_offsets:
        return current
    ordered = sorted((-1 if o is None else o for o in voter_offsets.values()), reverse=True)
    candidate = ordered[len(ordered) // 2]
    if candidate <= epoch_start_offset:
        return current
    if current is None or candidate > current:
        return candidate
    return current


@dataclass(slots=True)
class ReplicaProgress:
    """Kafka's `LeaderState.ReplicaState`."""

    replica_id: int
    directory_id: str | None = None
    end_offset: int | None = None
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    last_fetch_leader_end_offset: int = -1
    # Read lease (core/read_lease.py): when this leader last sent the replica a successful
    # Fetch response and on which inbound connection (the request's `source`), and the send
    # time of the last response the replica has provably received (it fetched again after it
    # on that same connection: one request in flight per connection).
    last_response_ms: int = -1
    last_response_source: int = -1
    received_response_ms: int = -1
    # The read index (core/read_index.py): the same two as sequence numbers of this term's
    # successful voter responses (LeaderProgress.responses_sent), exact where clocks tie.
    last_response_seq: int = 0
    received_response_seq: int = 0


class LeaderProgress:
    """Mutable progress of one leader's term; replaced wholesale on every new term."""

    __slots__ = (
        "epoch_start_offset",
        "high_watermark",
        "local_id",
        "observers",
        "responses_sent",
        "voters",
    )

    def __init__(self, local_id: int, voters: Iterable[int | ReplicaKey], epoch_start_offset: int):
        self.local_id = local_id
        self.epoch_start_offset = epoch_start_offset
        keys = [ReplicaKey(v) if isinstance(v, int) else v for v in voters]
        self.voters: dict[int, ReplicaProgress] = {
            k.id: ReplicaProgress(k.id, k.directory_id) for k in keys
        }
        self.observers: dict[ReplicaKey, ReplicaProgress] = {}
        self.high_watermark: int | None = None
        self.responses_sent = 0  # successful Fetch responses to voters in this term

    def _replica(self, replica_id: int, key: ReplicaKey | None = None) -> ReplicaProgress:
        """A voter's progress by id, or (`key` given: not a voter) an observer's by key."""
        if key is None:
            state = self.voters.get(replica_id)
            if state is not None:
                return state
            key = next((k for k in self.observers if k.id == replica_id), ReplicaKey(replica_id))
        state = self.observers.get(key)
        if state is None:
            state = self.observers[key] = ReplicaProgress(key.id, key.directory_id)
        return state

    def set_voters(self, keys: Iterable[ReplicaKey]) -> None:
        """Kafka's `updateVoterAndObserverStates`: the voter set changed (a VotersRecord in the
        leader's log); a new voter keeps the progress it made as an observer, a removed one
        (the leader itself included) goes on as an observer."""
        old = self.voters
        new: dict[int, ReplicaProgress] = {}
        for k in keys:
            state = old.pop(k.id, None)
            if state is None or state.directory_id not in (None, k.directory_id):
                if state is not None:
                    old[k.id] = state
                state = self.observers.pop(k, None) or ReplicaProgress(k.id, k.directory_id)
            state.directory_id = k.directory_id
            new[k.id] = state
        for state in old.values():
            self.observers.setdefault(ReplicaKey(state.replica_id, state.directory_id), state)
        self.voters = new

    def is_observer_caught_up(self, key: ReplicaKey, now_ms: int) -> bool:
        """Kafka's `isReplicaCaughtUp` for AddRaftVoter: an observer that has caught up with
        the leader once and fetched within the last hour."""
        state = self.observers.get(key)
        return (
            state is not None
            and state.last_caught_up_ms > 0
            and state.last_fetch_ms > 0
            and state.last_fetch_ms > now_ms - 3_600_000
        )

    def update_local(self, flushed_end_offset: int, now_ms: int) -> bool:
        """The leader's own durable end offset moved; True if the HW advanced."""
        state = self._replica(self.local_id)
        state.end_offset = flushed_end_offset
        state.last_fetch_ms = state.last_caught_up_ms = now_ms
        return self._maybe_advance()

    def update_replica(
        self,
        replica_id: int,
        fetch_offset: int,
        leader_end_offset: int,
        now_ms: int,
        observer: ReplicaKey | None = None,
    ) -> bool:
        """A validated Fetch at `fetch_offset` (everything below it durable there), the leader's
        flushed end offset being `leader_end_offset`; True if the HW advanced. `observer` is
        the fetcher's key when it is not a voter (whatever its id)."""
        state = self._replica(replica_id, observer)
        # Kafka's `ReplicaState.updateFollowerState` (leader end offset = its flushed one).
        if fetch_offset >= leader_end_offset:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)
        elif state.last_fetch_leader_end_offset > 0 and (
            fetch_offset >= state.last_fetch_leader_end_offset
        ):
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.end_offset = fetch_offset
        state.last_fetch_ms = max(state.last_fetch_ms, now_ms)
        state.last_fetch_leader_end_offset = leader_end_offset
        return observer is None and replica_id in self.voters and self._maybe_advance()

    def fetch_arrived(self, replica_id: int, source: int) -> None:
        """A new Fetch from a voter on inbound connection `source`: it received our previous
        response if that went out on the same connection (read lease). On another connection
        it proves nothing: the replica may have given up on the old one before the response
        arrived (a timeout, a state change), and its retry does not wait for it."""
        state = self.voters.get(replica_id)
        if state is not None and source == state.last_response_source:
            state.received_response_ms = max(state.received_response_ms, state.last_response_ms)
            state.received_response_seq = max(state.received_response_seq, state.last_response_seq)

    def response_sent(self, replica_id: int, now_ms: int, source: int) -> None:
        """A successful Fetch response left for a voter on inbound connection `source` (its
        fetch timer restarts on it)."""
        state = self.voters.get(replica_id)
        if state is not None:
            self.responses_sent += 1
            state.last_response_ms = now_ms
            state.last_response_source = source
            state.last_response_seq = self.responses_sent

    def active_observers(self, now_ms: int) -> dict[ReplicaKey, ReplicaProgress]:
        """Kafka's `observerStates(now)`: observers that fetched within the observer session
        timeout; the others are forgotten (`clearInactiveObservers`)."""
        stale = [
            o
            for o, s in self.observers.items()
            if now_ms - s.last_fetch_ms >= OBSERVER_SESSION_TIMEOUT_MS
        ]
        for o in stale:
            del self.observers[o]
        return self.observers

    def _maybe_advance(self) -> bool:
        offsets = {v: s.end_offset for v, s in self.voters.items()}
        new = compute_high_watermark(offsets, self.epoch_start_offset, self.high_watermark)
        if new != self.high_watermark:
            self.high_watermark = new
            return True
        return False

    def voters_by_descending_offset(self) -> list[int]:
        """Non-leader voters, most caught up first (EndQuorumEpoch preferred candidates)."""
        others = [s for v, s in self.voters.items() if v != self.local_id]
        others.sort(
            key=lambda s: (-(s.end_offset if s.end_offset is not None else -1), s.replica_id)
        )
        return [s.replica_id for s in others]

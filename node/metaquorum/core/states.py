"""Election states of a KRaft replica, one immutable class each (KIP-595, KIP-996; Kafka 4.3).

Role: Unattached (voted or not), Prospective (pre-vote), Candidate, Leader, Follower, Resigned,
each a frozen slotted dataclass holding its epoch and its deadlines as absolute milliseconds.
`ElectionState` is what is persisted in `quorum-state` (epoch, leader id, voted key); each state
maps to one. Vote-granting rules live here (`can_grant_vote`), as in Kafka's `EpochState`.

Invariants: a state never changes in place (the transition gate replaces it); the persisted
`ElectionState` of a state is a pure function of it, so "did this transition change durable
state" is a comparison.
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum

from metaquorum.core.ids import OffsetAndEpoch, ReplicaKey
from metaquorum.core.leader_data import LeaderData
from metaquorum.core.value import value
from metaquorum.core.vote_tally import VoteTally
from metaquorum.core.voter_set import ListenerEndpoint


class Role(Enum):
    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


@value
class ElectionState:
    """Kafka's `ElectionState`: the durable part (`quorum-state`)."""

    epoch: int
    leader_id: int = -1
    voted_key: ReplicaKey | None = None


def _unattached_or_prospective_can_grant(
    voted_key: ReplicaKey | None,
    leader_id: int | None,
    candidate: ReplicaKey,
    log_up_to_date: bool,
    pre_vote: bool,
) -> bool:
    # Kafka 4.3 `QuorumState.unattachedOrProspectiveCanGrantVote`.
    if pre_vote:
        return log_up_to_date
    if voted_key is not None:
        return voted_key.matches(candidate)
    if leader_id is not None:
        return False
    return log_up_to_date


@value
class UnattachedState:
    epoch: int
    election_deadline_ms: int
    voted_key: ReplicaKey | None = None
    leader_id: int | None = None
    high_watermark: int | None = None

    @property
    def role(self) -> Role:
        return Role.UNATTACHED

    def election(self, local_id: int) -> ElectionState:
        lid = -1 if self.leader_id is None else self.leader_id
        return ElectionState(self.epoch, lid, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        return _unattached_or_prospective_can_grant(
            self.voted_key, self.leader_id, candidate, log_up_to_date, pre_vote
        )


@value
class ProspectiveState:
    """KIP-996: collecting non-binding pre-votes at the current epoch."""

    epoch: int
    election_deadline_ms: int
    tally: VoteTally
    voted_key: ReplicaKey | None = None
    leader_id: int | None = None
    retries: int = 1
    high_watermark: int | None = None

    @property
    def role(self) -> Role:
        return Role.PROSPECTIVE

    def election(self, local_id: int) -> ElectionState:
        lid = -1 if self.leader_id is None else self.leader_id
        return ElectionState(self.epoch, lid, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        return _unattached_or_prospective_can_grant(
            self.voted_key, self.leader_id, candidate, log_up_to_date, pre_vote
        )


@value
class CandidateState:
    """A real election at a bumped epoch; the replica voted for itself."""

    epoch: int
    election_deadline_ms: int
    tally: VoteTally
    retries: int = 1
    high_watermark: int | None = None

    @property
    def role(self) -> Role:
        return Role.CANDIDATE

    def election(self, local_id: int) -> ElectionState:
        return ElectionState(self.epoch, -1, ReplicaKey(local_id))

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        # Kafka `CandidateState.canGrantVote`: only pre-votes, and only for an up-to-date log.
        return pre_vote and log_up_to_date


@value
class LeaderState:
    """Leading `epoch`; the term's mutable data lives in `data` (`LeaderData`)."""

    epoch: int
    epoch_start_offset: int
    granting_voters: frozenset[int]
    check_quorum_deadline_ms: int
    begin_quorum_epoch_deadline_ms: int
    # The term's mutable data (progress, accumulator, purgatory, pending appends): owned here,
    # not by the node; kept across in-place updates (`dataclasses.replace` copies the reference).
    data: LeaderData = field(default_factory=LeaderData.empty, compare=False, repr=False)

    @property
    def role(self) -> Role:
        return Role.LEADER

    def election(self, local_id: int) -> ElectionState:
        # Kafka 4.3 `LeaderState.election()`: `withElectedLeader(epoch, id, Optional.empty())`,
        # so quorum-state holds votedId -1 (a leader of the epoch never grants a vote anyway).
        return ElectionState(self.epoch, local_id, None)

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        return False  # Kafka 4.3 `LeaderState.canGrantVote`: never, not even a pre-vote


@value
class FollowerState:
    epoch: int
    leader_id: int
    fetch_deadline_ms: int
    voted_key: ReplicaKey | None = None
    has_fetched: bool = False
    high_watermark: int | None = None
    # FetchSnapshot in progress: the snapshot id and the bytes received so far (KIP-630).
    fetching_snapshot: tuple[OffsetAndEpoch, bytes] | None = None
    # Where the leader is, when the response that named it said so (KIP-853 NodeEndpoints; a
    # leader this replica knows no voter entry for, e.g. found through a bootstrap address).
    leader_endpoint: ListenerEndpoint | None = None
    # KIP-853, this follower's own timers (Kafka's FollowerState `updateVoterSetPeriodTimer`
    # and `hasUpdatedLeader`): when it may next send UpdateRaftVoter, or (an observer with
    # auto-join) Add/RemoveRaftVoter, and whether this leader took its UpdateRaftVoter.
    update_voter_next_ms: int = 0
    auto_join_next_ms: int = 0
    has_updated_leader: bool = False

    @property
    def role(self) -> Role:
        return Role.FOLLOWER

    def election(self, local_id: int) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        # Kafka 4.3 `FollowerState.canGrantVote`: a pre-vote only until the first successful
        # fetch from the leader in this epoch (KIP-996 and the KAFKA-17641 follow-up).
        if pre_vote and not self.has_fetched:
            return log_up_to_date
        return False


@value
class ResignedState:
    """A leader that stepped down; it sends EndQuorumEpoch until acknowledged."""

    epoch: int
    election_deadline_ms: int
    unacked_voters: frozenset[int]
    preferred_successors: tuple[int, ...]
    high_watermark: int | None = None

    @property
    def role(self) -> Role:
        return Role.RESIGNED

    def election(self, local_id: int) -> ElectionState:
        return ElectionState(self.epoch, local_id, None)  # votedId -1, as Kafka writes it

    def can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        # Kafka 4.3 `ResignedState.canGrantVote`: a pre-vote for an up-to-date log, so the
        # preferred successor of a graceful resign can win its pre-vote with the old leader's.
        return pre_vote and log_up_to_date


EpochState = (
    UnattachedState
    | ProspectiveState
    | CandidateState
    | LeaderState
    | FollowerState
    | ResignedState
)


def state_summary(state: EpochState, local_id: int) -> str:
    """One log line's worth, as Kafka logs "Completed transition to FollowerState(...)"."""
    election = state.election(local_id)
    parts = [f"epoch={state.epoch}"]
    if election.leader_id >= 0:
        parts.append(f"leader={election.leader_id}")
    if election.voted_key is not None:
        parts.append(f"voted={election.voted_key.id}")
    return f"{state.role.value}({', '.join(parts)})"

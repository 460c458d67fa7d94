"""The one transition gate of the election state machine (Kafka 4.3 `QuorumState`).

Role: decide whether a state change is legal and whether it is durable. Every state change of
`RaftNode` goes through `check_transition`; a change of the persisted `ElectionState` (epoch,
leader, vote) makes the node emit `PersistElectionState` before any other effect of the step.

Legal transitions (QuorumState javadoc, with the epoch rule of each; e = old epoch, e' = new):

| from        | to          | epoch rule                           | trigger |
| ----------- | ----------- | ------------------------------------ | ----------------------------- |
| Unattached  | Unattached  | e' > e, or e' = e and a vote is cast | higher epoch; granting a vote |
| Unattached  | Prospective | e' = e (voters only)                 | election timeout |
| Unattached  | Follower    | e' >= e                              | leader discovered |
| Prospective | Unattached  | e' >= e                              | higher epoch; pre-vote lost |
| Prospective | Prospective | e' = e and a vote is cast            | granting a vote |
| Prospective | Candidate   | e' = e + 1                           | pre-vote majority |
| Prospective | Follower    | e' >= e                              | leader known or discovered |
| Candidate   | Unattached  | e' > e                               | higher epoch |
| Candidate   | Prospective | e' = e                               | election lost or timed out |
| Candidate   | Leader      | e' = e                               | vote majority |
| Candidate   | Follower    | e' >= e                              | another leader won the epoch |
| Leader      | Unattached  | e' > e                               | higher epoch |
| Leader      | Resigned    | e' = e                               | check-quorum, graceful resign |
| Leader      | Follower    | e' > e                               | leader of a higher epoch |
| Follower    | Unattached  | e' > e                               | higher epoch |
| Follower    | Prospective | e' = e (voters only)                 | fetch timeout |
| Follower    | Follower    | e' > e                               | leader of a higher epoch |
| Resigned    | Unattached  | e' > e                               | higher epoch; on timeout |
| Resigned    | Follower    | e' > e                               | leader of a higher epoch |
| Resigned    | Prospective | e' = e                               | one voter starting |

Candidate -> Follower at the same epoch is not in Kafka's javadoc table but its
`transitionToFollower` allows it (another candidate won the epoch with other votes).

Observers (replicas outside the voter set) only move between Unattached and Follower.
`check_in_place_update` is the gate for updates that keep the role, the epoch and the durable
election state (timers, tallies, a snapshot download): `RaftNode.update_state`.
A vote cast in an epoch is never lost or changed within that epoch (durable single vote).
"""

from __future__ import annotations

from metaquorum.core.errors import IllegalTransition
from metaquorum.core.states import (
    ElectionState,
    EpochState,
    ProspectiveState,
    Role,
    UnattachedState,
)

U, P, C, L, F, R = (
    Role.UNATTACHED,
    Role.PROSPECTIVE,
    Role.CANDIDATE,
    Role.LEADER,
    Role.FOLLOWER,
    Role.RESIGNED,
)

# (from, to) -> epoch rule: "gt", "ge", "eq", "eq+1"
LEGAL: dict[tuple[Role, Role], str] = {
    (U, U): "ge",
    (U, P): "eq",
    (U, F): "ge",
    (P, U): "ge",
    (P, P): "eq",
    (P, C): "eq+1",
    (P, F): "ge",
    (C, U): "gt",
    (C, P): "eq",
    (C, L): "eq",
    (C, F): "ge",
    (L, U): "gt",
    (L, R): "eq",
    (L, F): "gt",
    (F, U): "gt",
    (F, P): "eq",
    (F, F): "gt",
    (R, U): "gt",
    (R, P): "eq",
    (R, F): "gt",
}

OBSERVER_ROLES = frozenset({U, F})


def _epoch_ok(rule: str, old: int, new: int) -> bool:
    if rule == "gt":
        return new > old
    if rule == "ge":
        return new >= old
    if rule == "eq":
        return new == old
    return new == old + 1


def check_transition(old: EpochState, new: EpochState, *, local_id: int, is_voter: bool) -> None:
    """Raise `IllegalTransition` unless `old -> new` is legal for this replica."""
    rule = LEGAL.get((old.role, new.role))
    if rule is None:
        raise IllegalTransition(f"{old.role.value} -> {new.role.value} is not a legal transition")
    # A leader that removed itself (KIP-853) is no longer a voter and resigns: Kafka's
    # transitionToResigned only asks that it leads.
    removed_leader = old.role is L and new.role is R
    if not is_voter and new.role not in OBSERVER_ROLES and not removed_leader:
        raise IllegalTransition(f"an observer cannot become {new.role.value}")
    if not _epoch_ok(rule, old.epoch, new.epoch):
        raise IllegalTransition(
            f"{old.role.value}({old.epoch}) -> {new.role.value}({new.epoch}) breaks rule {rule}"
        )
    if old.role is new.role and old.role in (U, P) and new.epoch == old.epoch:
        assert isinstance(old, UnattachedState | ProspectiveState)
        assert isinstance(new, UnattachedState | ProspectiveState)
        if old.voted_key is not None or new.voted_key is None:
            raise IllegalTransition(
                f"{old.role.value} -> {new.role.value} in the same epoch must cast a vote"
            )
    if new.epoch == old.epoch:
        old_election = old.election(local_id)
        new_election = new.election(local_id)
        # A leader (or resigned leader) of the epoch stores votedId -1 as Kafka does: its own
        # vote is implied by leading and it never grants another.
        elected_self = new_election.leader_id == local_id and new_election.voted_key is None
        if (
            old_election.voted_key is not None
            and old_election.voted_key != new_election.voted_key
            and not (elected_self and old_election.voted_key.id == local_id)
        ):
            raise IllegalTransition(
                f"epoch {old.epoch}: the vote for {old_election.voted_key} would be lost by "
                f"{new.role.value}"
            )
        old_leader = old_election.leader_id
        if old_leader >= 0 and new_election.leader_id not in (-1, old_leader):
            raise IllegalTransition(f"epoch {old.epoch} already has leader {old_leader}")


def is_durable(old: EpochState | None, new: EpochState, local_id: int) -> bool:
    """True when the transition changes what `quorum-state` must hold."""
    if old is None:
        return True
    return old.election(local_id) != new.election(local_id)


def election_of(state: EpochState, local_id: int) -> ElectionState:
    return state.election(local_id)


def check_in_place_update(old: EpochState, new: EpochState, *, local_id: int) -> None:
    """An update of the current state's own data (timers, tally, progress of a download): the
    role, the epoch and the durable election state stay as they are; anything else must go
    through `check_transition` (and persist first when durable)."""
    if type(old) is not type(new) or old.epoch != new.epoch:
        raise IllegalTransition(
            f"in-place update {old.role.value}({old.epoch}) -> {new.role.value}({new.epoch}): "
            "a role or epoch change must be a transition"
        )
    if old.election(local_id) != new.election(local_id):
        raise IllegalTransition("an in-place update cannot change the durable election state")

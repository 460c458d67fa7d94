"""Every (from, to) pair of election states, legal and illegal, through the transition gate."""

from __future__ import annotations

import itertools

import pytest
from metaquorum.core.errors import IllegalTransition
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.states import (
    CandidateState,
    ElectionState,
    EpochState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    Role,
    UnattachedState,
)
from metaquorum.core.transitions import (
    LEGAL,
    check_in_place_update,
    check_transition,
    is_durable,
)
from metaquorum.core.vote_tally import VoteTally

LOCAL = 1
VOTERS = frozenset({1, 2, 3})


def make(role: Role, epoch: int, voted: ReplicaKey | None = None) -> EpochState:
    tally = VoteTally.start(VOTERS, LOCAL)
    if role is Role.UNATTACHED:
        return UnattachedState(epoch, 0, voted_key=voted)
    if role is Role.PROSPECTIVE:
        return ProspectiveState(epoch, 0, tally, voted_key=voted)
    if role is Role.CANDIDATE:
        return CandidateState(epoch, 0, tally)
    if role is Role.LEADER:
        return LeaderState(epoch, 0, frozenset(), 0, 0)
    if role is Role.FOLLOWER:
        return FollowerState(epoch, 2, 0, voted_key=voted)
    return ResignedState(epoch, 0, frozenset(), ())


# What Kafka's QuorumState allows, written out independently of LEGAL's encoding.
EXPECTED = {
    ("Unattached", "Unattached"): {+1},
    ("Unattached", "Prospective"): {0},
    ("Unattached", "Follower"): {0, +1},
    ("Prospective", "Unattached"): {0, +1},
    ("Prospective", "Candidate"): {+1},
    ("Prospective", "Follower"): {0, +1},
    ("Prospective", "Prospective"): set(),  # same epoch only by casting a vote (test below)
    ("Candidate", "Unattached"): {+1},
    ("Candidate", "Prospective"): {0},
    ("Candidate", "Leader"): {0},
    ("Candidate", "Follower"): {0, +1},
    ("Leader", "Unattached"): {+1},
    ("Leader", "Resigned"): {0},
    ("Leader", "Follower"): {+1},
    ("Follower", "Unattached"): {+1},
    ("Follower", "Prospective"): {0},
    ("Follower", "Follower"): {+1},
    ("Resigned", "Unattached"): {+1},
    ("Resigned", "Follower"): {+1},
    ("Resigned", "Prospective"): {0},  # Kafka's transitionToProspective (a one-voter start)
}


@pytest.mark.parametrize(
    ("old_role", "new_role", "delta"),
    list(itertools.product(Role, Role, (-1, 0, +1, +2))),
)
def test_every_transition_for_a_voter(old_role: Role, new_role: Role, delta: int) -> None:
    old = make(old_role, 5)
    # A candidate voted for itself; at the same epoch the next state keeps that vote.
    keep = ReplicaKey(LOCAL) if old_role is Role.CANDIDATE and delta == 0 else None
    new = make(new_role, 5 + delta, keep)
    allowed = EXPECTED.get((old_role.value, new_role.value), set())
    legal = delta in allowed or (
        delta == 2
        and +1 in allowed
        and (old_role, new_role)
        != (
            Role.PROSPECTIVE,
            Role.CANDIDATE,
        )
    )
    if legal:
        check_transition(old, new, local_id=LOCAL, is_voter=True)
    else:
        with pytest.raises(IllegalTransition):
            check_transition(old, new, local_id=LOCAL, is_voter=True)


def test_legal_table_matches_expected() -> None:
    assert {(a.value, b.value) for a, b in LEGAL} == set(EXPECTED)


@pytest.mark.parametrize(("old_role", "new_role"), list(itertools.product(Role, Role)))
def test_observers_only_move_between_unattached_and_follower(old_role: Role, new_role: Role):
    old, new = make(old_role, 5), make(new_role, 6)
    if new_role in (Role.UNATTACHED, Role.FOLLOWER) and (old_role, new_role) in LEGAL:
        check_transition(old, new, local_id=LOCAL, is_voter=False)
    else:
        with pytest.raises(IllegalTransition):
            check_transition(old, new, local_id=LOCAL, is_voter=False)


def test_unattached_same_epoch_only_by_casting_a_vote() -> None:
    a = UnattachedState(5, 0)
    voted = UnattachedState(5, 0, voted_key=ReplicaKey(2))
    check_transition(a, voted, local_id=LOCAL, is_voter=True)
    assert is_durable(a, voted, LOCAL)
    with pytest.raises(IllegalTransition):
        check_transition(
            voted, UnattachedState(5, 0, voted_key=ReplicaKey(3)), local_id=1, is_voter=True
        )
    with pytest.raises(IllegalTransition):
        check_transition(voted, a, local_id=LOCAL, is_voter=True)


def test_prospective_same_epoch_only_by_casting_a_vote() -> None:
    """Kafka 4.3 `prospectiveAddVotedState`: a Prospective that grants a vote stays one."""
    tally = VoteTally.start(VOTERS, LOCAL)
    p = ProspectiveState(5, 0, tally)
    voted = ProspectiveState(5, 10, tally, voted_key=ReplicaKey(2))
    check_transition(p, voted, local_id=LOCAL, is_voter=True)
    assert is_durable(p, voted, LOCAL)
    with pytest.raises(IllegalTransition, match="cast a vote"):
        check_transition(p, ProspectiveState(5, 10, tally), local_id=LOCAL, is_voter=True)
    with pytest.raises(IllegalTransition):
        check_transition(voted, p, local_id=LOCAL, is_voter=True)


def test_leader_and_resigned_store_voted_id_minus_one() -> None:
    """Kafka writes quorum-state of a leader (and a resigned leader) with votedId -1; the
    candidate's vote for itself gives way to the leadership, no other vote ever does."""
    c = CandidateState(5, 0, VoteTally.start(VOTERS, LOCAL))
    lead = LeaderState(5, 0, frozenset(), 0, 0)
    assert lead.election(LOCAL) == ElectionState(5, LOCAL, None)
    assert ResignedState(5, 0, frozenset(), ()).election(LOCAL) == ElectionState(5, LOCAL, None)
    check_transition(c, lead, local_id=LOCAL, is_voter=True)
    voted_other = UnattachedState(5, 0, voted_key=ReplicaKey(2))
    with pytest.raises(IllegalTransition):
        check_transition(voted_other, lead, local_id=LOCAL, is_voter=True)


def test_a_vote_is_never_lost_within_its_epoch() -> None:
    voted = UnattachedState(5, 0, voted_key=ReplicaKey(2))
    with pytest.raises(IllegalTransition, match="vote"):
        check_transition(voted, FollowerState(5, 3, 0), local_id=LOCAL, is_voter=True)
    check_transition(
        voted, FollowerState(5, 3, 0, voted_key=ReplicaKey(2)), local_id=1, is_voter=True
    )
    with pytest.raises(IllegalTransition, match="vote"):
        check_transition(
            voted, ProspectiveState(5, 0, VoteTally.start(VOTERS, 1)), local_id=1, is_voter=True
        )


def test_one_leader_per_epoch_in_the_gate() -> None:
    p = ProspectiveState(5, 0, VoteTally.start(VOTERS, 1), leader_id=2)
    with pytest.raises(IllegalTransition, match="leader"):
        check_transition(p, FollowerState(5, 3, 0), local_id=LOCAL, is_voter=True)
    check_transition(p, FollowerState(5, 2, 0), local_id=LOCAL, is_voter=True)


def test_durability_is_a_change_of_election_state() -> None:
    f = FollowerState(5, 2, 0)
    assert not is_durable(f, FollowerState(5, 2, 999, has_fetched=True, high_watermark=3), LOCAL)
    assert is_durable(f, FollowerState(6, 2, 0), LOCAL)
    assert is_durable(None, f, LOCAL)


def test_in_place_updates_keep_role_epoch_and_election() -> None:
    """Issue 13: `RaftNode.update_state`'s gate. A timer or tally may change in place; a role,
    an epoch or the durable election state may not (those are transitions)."""
    f = FollowerState(5, 2, 0)
    check_in_place_update(f, FollowerState(5, 2, 99, has_fetched=True), local_id=LOCAL)
    with pytest.raises(IllegalTransition, match="role or epoch"):
        check_in_place_update(f, FollowerState(6, 2, 0), local_id=LOCAL)
    with pytest.raises(IllegalTransition, match="role or epoch"):
        check_in_place_update(f, UnattachedState(5, 0), local_id=LOCAL)
    with pytest.raises(IllegalTransition, match="election state"):
        check_in_place_update(f, FollowerState(5, 3, 0), local_id=LOCAL)


def test_no_core_module_assigns_the_state_outside_the_gates() -> None:
    """The 13 direct `node.state = ...` writes of the handlers are gone (issue 13): only
    `RaftNode.transition_to` / `update_state` (and the leave-leadership path) assign it."""
    import pathlib
    import re

    import metaquorum.core as core

    root = pathlib.Path(core.__file__).parent
    offenders = [
        f"{p.name}:{i}"
        for p in root.glob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\bnode\.state\s*=[^=]", line)
    ]
    assert offenders == []
    node_py = (root / "node.py").read_text()
    assert len(re.findall(r"\bself\.state\s*=[^=]", node_py)) == 3

"""The read index (core/read_index.py) against a naive oracle, and on a node."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from metaquorum.core.effects import SendResponse
from metaquorum.core.events import ConfirmReads
from metaquorum.core.high_watermark import ReplicaProgress
from metaquorum.core.read_index import reads_confirmed_after

from tests.unit.core.context import RaftTestContext, fetch_request


@given(
    received=st.lists(st.integers(0, 20), min_size=0, max_size=6),
    seq=st.integers(0, 20),
    leader_votes=st.booleans(),
)
def test_a_majority_confirmed_after_seq(received: list[int], seq: int, leader_votes: bool) -> None:
    voters = {
        i + 1: ReplicaProgress(i + 1, received_response_seq=r) for i, r in enumerate(received)
    }
    if leader_votes:
        voters[0] = ReplicaProgress(0, received_response_seq=0)
    # Oracle: the leader (if a voter) and every voter that confirmed after `seq`, a majority.
    yes = int(leader_votes) + sum(1 for r in received if r > seq)
    assert reads_confirmed_after(0, voters, seq) == (yes * 2 > len(voters))


def _leader() -> tuple[RaftTestContext, int]:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()
    e = ctx.node.epoch
    for v, conn in ((2, 20), (3, 30)):
        ctx.request(conn, fetch_request(v, e, 2, 1, max_wait=0))
        ctx.request(conn, fetch_request(v, e, 3, e, hw=3, max_wait=0))
    return ctx, e


def test_a_read_waits_for_a_round_after_it_even_inside_the_lease() -> None:
    """Inside its lease a leader can still have a successor: Kafka 4.3 grants a standard vote
    of a higher epoch while its fetch timer runs, so a pre-vote granted before a voter fetched
    again still elects. The read index asks for contact after the read: an older one, however
    recent, does not confirm it."""
    ctx, e = _leader()
    ctx.request(20, fetch_request(2, e, 3, e, hw=3, max_wait=500))  # parked
    assert ctx.node.holds_read_lease(ctx.now)
    progress = ctx.node.progress
    assert progress is not None
    seq = progress.responses_sent  # a read arrives now
    assert not ctx.node.reads_confirmed_after(e, seq)
    ctx.handle(ConfirmReads())  # the parked fetch is answered at once
    assert any(isinstance(x, SendResponse) for x in ctx.effects)
    assert not ctx.node.reads_confirmed_after(e, seq)
    ctx.request(21, fetch_request(2, e, 3, e, hw=3, max_wait=500))  # another connection
    assert not ctx.node.reads_confirmed_after(e, seq)
    ctx.request(20, fetch_request(2, e, 3, e, hw=3, max_wait=500))  # the next on the same one
    assert ctx.node.reads_confirmed_after(e, seq)
    assert not ctx.node.reads_confirmed_after(e + 1, seq)  # another epoch confirms nothing


def test_a_voter_in_a_later_epoch_confirms_nothing() -> None:
    ctx, e = _leader()
    progress = ctx.node.progress
    assert progress is not None
    seq = progress.responses_sent
    ctx.handle(ConfirmReads())
    # Voter 3 answers with a fetch of an epoch it moved to: it may have elected a successor.
    ctx.request(30, fetch_request(3, e + 1, 3, e, hw=3, max_wait=500))
    assert not ctx.node.reads_confirmed_after(e, seq)


def test_a_one_voter_quorum_confirms_at_once() -> None:
    ctx = RaftTestContext(1, [1], epochs=[1])
    ctx.advance_to_deadline()
    ctx.flush()
    assert ctx.node.state.role.value == "Leader"
    assert ctx.node.reads_confirmed_after(ctx.node.epoch, 10**9)

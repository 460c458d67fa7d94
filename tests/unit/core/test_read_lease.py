"""The leader's read lease (core/read_lease.py) against a naive oracle, and on a node."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from metaquorum.core.effects import AbandonRequest, SendResponse
from metaquorum.core.high_watermark import ReplicaProgress
from metaquorum.core.read_lease import LEASE_FRACTION, holds_read_lease, read_lease_end_ms

from tests.unit.core.context import RaftTestContext, fetch_request


def _voters(local: int, fetches: dict[int, int]) -> dict[int, ReplicaProgress]:
    out = {local: ReplicaProgress(local, end_offset=0, last_fetch_ms=0)}
    for v, t in fetches.items():
        out[v] = ReplicaProgress(v, end_offset=-1, received_response_ms=t)
    return out


@given(
    fetches=st.lists(st.integers(-1, 10_000), min_size=0, max_size=6),
    now=st.integers(0, 20_000),
)
def test_lease_is_a_fresh_majority_of_fetches(fetches: list[int], now: int) -> None:
    voters = _voters(0, {i + 1: t for i, t in enumerate(fetches)})
    timeout = 2000
    # Oracle: count the other voters whose last fetch is recent enough; with the leader
    # itself they must be a majority of all voters.
    fresh = sum(1 for t in fetches if t >= 0 and now < t + int(timeout * LEASE_FRACTION))
    expected = fresh + 1 > (len(fetches) + 1) // 2
    assert holds_read_lease(0, voters, timeout, now) == expected


def test_one_voter_always_and_nobody_yet_never() -> None:
    assert read_lease_end_ms(1, _voters(1, {}), 2000) == 2**62
    assert read_lease_end_ms(1, _voters(1, {2: -1, 3: -1}), 2000) is None


def test_leader_node_loses_its_lease_without_fetches() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()
    e = ctx.node.epoch
    assert not ctx.node.holds_read_lease(ctx.now)  # nobody fetched in this term yet
    ctx.request(2, fetch_request(2, e, 2, 1, max_wait=0))  # answered at once
    sent = ctx.now
    assert not ctx.node.holds_read_lease(ctx.now)  # not yet known to have arrived
    ctx.advance(100)
    ctx.request(2, fetch_request(2, e, 3, e, max_wait=0))  # it fetched again: it got it
    assert ctx.node.holds_read_lease(ctx.now)
    lease = int(ctx.node.config.fetch_timeout_ms * LEASE_FRACTION)
    assert ctx.node.holds_read_lease(sent + lease - 1)
    assert not ctx.node.holds_read_lease(sent + lease)


def test_a_parked_fetch_answered_later_does_not_extend_the_lease() -> None:
    """The hole the first version had: a fetch parked at t and answered at t + MaxWait (maybe
    after a partition, never received) must not count as fresh contact at t + MaxWait."""
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()
    e = ctx.node.epoch
    ctx.request(2, fetch_request(2, e, 2, 1, max_wait=0))
    first = ctx.now
    ctx.advance(10)
    ctx.request(2, fetch_request(2, e, 3, e, max_wait=500))  # proves `first`; parked
    ctx.advance(500)  # the purgatory answers it now: a response that may never arrive
    lease = int(ctx.node.config.fetch_timeout_ms * LEASE_FRACTION)
    assert not ctx.node.holds_read_lease(first + lease)


def test_a_fetch_on_a_new_connection_proves_nothing() -> None:
    """CI's nemesis (2026-11-29, seed 303): a leader paused 3.2 s, on waking, answered a fetch
    parked before the pause, then took a voter's other Fetch, sent long before while that
    voter was already voting for a successor, as proof the answer had arrived: it held its
    lease and served reads 30 ms long that missed offsets the new leader had committed. The
    source of a request is its inbound connection: a Fetch proves only the response before it
    on the same connection (one request in flight per connection, core/request_manager.py)."""
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()
    e = ctx.node.epoch
    old, new = 20, 21  # the voter's connection before and after its retry
    ctx.request(old, fetch_request(2, e, 2, 1, max_wait=0))
    ctx.advance(10)
    ctx.request(old, fetch_request(2, e, 3, e, max_wait=500))  # answered: the HW moved
    ctx.advance(10)
    ctx.request(old, fetch_request(2, e, 3, e, hw=3, max_wait=500))
    assert not any(isinstance(x, SendResponse) for x in ctx.effects)  # parked
    # Paused for 3 s. On waking, what the kernel buffered comes in: voter 3's Fetch (check-
    # quorum counts it; the leader stays) and, in the same step, the purgatory answers the
    # parked fetch: a response at `woke`, on the old connection, that nobody will read.
    ctx.now += 3_000
    woke = ctx.now
    ctx.request(30, fetch_request(3, e, 3, e, hw=3, max_wait=500))
    assert ctx.node.state.role.value == "Leader"
    ctx.request(new, fetch_request(2, e, 3, e, hw=3, max_wait=500))  # the retry, sent long ago
    assert not ctx.node.holds_read_lease(woke)
    assert not ctx.node.holds_read_lease(ctx.now)


def test_the_next_fetch_on_the_same_connection_proves_the_response() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    ctx.become_leader()
    e = ctx.node.epoch
    ctx.request(20, fetch_request(2, e, 2, 1, max_wait=0))
    ctx.advance(50)
    ctx.request(21, fetch_request(2, e, 3, e, max_wait=0))  # a new connection: answered
    sent = ctx.now
    ctx.advance(50)
    assert not ctx.node.holds_read_lease(ctx.now)
    ctx.request(21, fetch_request(2, e, 3, e, max_wait=0))  # the same one: it got `sent`
    lease = int(ctx.node.config.fetch_timeout_ms * LEASE_FRACTION)
    assert ctx.node.holds_read_lease(sent + lease - 1)
    assert not ctx.node.holds_read_lease(sent + lease)


def test_a_state_change_abandons_the_requests_in_flight() -> None:
    """Winning with one pre-vote and one vote leaves the third voter's requests in flight: the
    core reports each as abandoned (the runtime closes its connection)."""
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1])
    abandoned: list[AbandonRequest] = []
    ctx.watchers.append(
        lambda c: abandoned.extend(e for e in c.effects if isinstance(e, AbandonRequest))
    )
    ctx.become_leader()
    to_3 = [e.correlation_id for e in ctx._history if e.destination == 3]
    assert len(to_3) >= 3  # pre-vote, vote, BeginQuorumEpoch
    # every one in flight at a state change; not the BeginQuorumEpoch still in flight
    assert [(a.destination, a.correlation_id) for a in abandoned] == [(3, c) for c in to_3[:-1]]

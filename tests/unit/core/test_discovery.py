"""Leader discovery through `controller.quorum.bootstrap.servers` and auto-join (issue 15,
KIP-853), in the style of Kafka's `KafkaRaftClientTest` observer cases: a replica formatted
`--no-initial-controllers` knows no voter, asks a bootstrap address (Kafka's pseudo-ids -2, -3,
...), learns the leader and its endpoint from the Fetch response's NodeEndpoints, fetches from
it, falls back to the bootstrap addresses when the leader goes quiet, and (auto-join) asks the
leader to remove its old key and add its new one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from metaquorum.core import discovery
from metaquorum.core.config import QuorumConfig
from metaquorum.core.events import RequestFailed
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import LogEntry
from metaquorum.core.states import FollowerState, UnattachedState
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    AddRaftVoterResponseData,
    EndQuorumEpochRequestData,
    FetchRequestData,
    FetchResponseData,
    RemoveRaftVoterRequestData,
)
from metaquorum.protocol.types import Uuid

from tests.unit.core.context import (
    RaftTestContext,
    begin_epoch,
    end_epoch,
    fetch_request,
    fetch_response,
    vote_request,
)


def _ep(i: int) -> ListenerEndpoint:
    return ListenerEndpoint("CONTROLLER", f"h{i}", 9090 + i)


def _dir(i: int) -> str:
    return str(Uuid(7, i))


def _observer(
    *,
    voters: VoterSet | None = None,
    auto_join: bool = False,
    kraft_version: int = 1,
    directory: int = 4,
) -> RaftTestContext:
    """Replica 4, formatted --no-initial-controllers: bootstrap servers h1, h2 and its own h4."""
    return RaftTestContext(
        4,
        [],
        voter_set=voters or VoterSet.empty(),
        kraft_version=kraft_version,
        directory_id=_dir(directory),
        endpoints=(_ep(4),),
        bootstrap=(_ep(1), _ep(2), _ep(4)),
        config=QuorumConfig(auto_join_enable=int(auto_join)),
    )


def _with_leader_endpoint(response: FetchResponseData, leader: int) -> FetchResponseData:
    ep = _ep(leader)
    node = FetchResponseData.NodeEndpoint(node_id=leader, host=ep.host, port=ep.port)
    return replace(response, node_endpoints=[node])


def test_pseudo_ids_leave_out_the_local_address() -> None:
    nodes = discovery.pseudo_nodes((_ep(1), _ep(2), _ep(4)), (_ep(4),))
    assert nodes == ((-2, _ep(1)), (-3, _ep(2)))


def test_an_observer_without_voters_asks_one_bootstrap_address_at_a_time() -> None:
    ctx = _observer()
    assert isinstance(ctx.node.state, UnattachedState) and not ctx.node.is_voter
    sent = ctx._history
    assert len(sent) == 1 and isinstance(sent[0].message, FetchRequestData)
    assert (sent[0].destination, sent[0].endpoint) in ((-2, _ep(1)), (-3, _ep(2)))
    ctx.advance(10)  # still in flight: no second discovery request
    assert ctx.sent(FetchRequestData) == []


def test_the_fetch_response_names_the_leader_and_where_it_is() -> None:
    ctx = _observer()
    source = ctx._history[-1].destination
    ctx.respond(source, _with_leader_endpoint(fetch_response(1, 5, error=6), 1))  # NOT_LEADER
    st = ctx.node.state
    assert isinstance(st, FollowerState)
    assert (st.epoch, st.leader_id, st.leader_endpoint) == (5, 1, _ep(1))
    (fetch,) = ctx.sent(FetchRequestData)  # in the same step
    # Leader 1 is no voter this replica knows of: the request carries the endpoint.
    assert (fetch.destination, fetch.endpoint) == (1, _ep(1))


def test_an_observer_whose_leader_is_quiet_asks_the_bootstrap_addresses_again() -> None:
    ctx = _observer()
    ctx.respond(ctx._history[-1].destination, _with_leader_endpoint(fetch_response(1, 5), 1))
    assert [r.destination for r in ctx.sent(FetchRequestData)] == [1]
    ctx.advance(ctx.node.config.fetch_timeout_ms)
    (again,) = ctx.sent(FetchRequestData)
    assert again.destination in (-2, -3) and again.endpoint in (_ep(1), _ep(2))
    assert isinstance(ctx.node.state, FollowerState)  # an observer never campaigns


def test_the_leader_tells_fetchers_its_endpoint_and_old_versions_drop_it() -> None:
    voters = VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, _dir(i)), (_ep(i),), 0, 1) for i in (1, 2, 3)
    )
    ctx = RaftTestContext(
        1, [1, 2, 3], voter_set=voters, kraft_version=1, directory_id=_dir(1), endpoints=(_ep(1),)
    )
    ctx.become_leader()
    ctx.request(9, fetch_request(9, ctx.node.epoch, 0, 0, max_wait=0))
    response = ctx.response().message
    assert isinstance(response, FetchResponseData)
    assert [(e.node_id, e.host, e.port) for e in response.node_endpoints] == [(1, "h1", 9091)]
    assert discovery.fetch_for_version(response, 16) is response
    assert discovery.fetch_for_version(response, 15).node_endpoints == []


def test_auto_join_adds_itself_through_the_leader_once_per_fetch_timeout() -> None:
    voters = VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, _dir(i)), (_ep(i),), 0, 1) for i in (1, 2, 3)
    )
    ctx = _observer(voters=voters, auto_join=True)
    ctx.respond(ctx._history[-1].destination, fetch_response(1, 5))
    (add,) = ctx.sent(AddRaftVoterRequestData)
    assert add.destination == 1 and add.endpoint is None  # voter 1's endpoint is known
    assert add.message.voter_id == 4 and str(add.message.voter_directory_id) == _dir(4)
    assert [(x.name, x.host, x.port) for x in add.message.listeners] == [("CONTROLLER", "h4", 9094)]
    assert add.message.ack_when_committed is False
    # REQUEST_TIMED_OUT (not caught up yet), or any answer: Fetch until the next period.
    ctx.respond(1, AddRaftVoterResponseData(error_code=7))
    assert ctx.sent(AddRaftVoterRequestData) == []
    assert [r.destination for r in ctx.sent(FetchRequestData)] == [1]
    ctx.now += ctx.node.config.fetch_timeout_ms - 1
    ctx.respond(1, fetch_response(1, 5))
    assert ctx.sent(AddRaftVoterRequestData) == []  # a period after the first: not yet
    ctx.now += 1
    ctx.respond(1, fetch_response(1, 5))
    assert [r.destination for r in ctx.sent(AddRaftVoterRequestData)] == [1]


def test_auto_join_after_a_disk_replacement_first_removes_the_old_key() -> None:
    voters = VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, _dir(i)), (_ep(i),), 0, 1) for i in (1, 2, 4)
    )
    ctx = _observer(voters=voters, auto_join=True, directory=40)  # a new disk: a new dir id
    assert not ctx.node.is_voter
    ctx.respond(ctx._history[-1].destination, fetch_response(1, 5))
    (remove,) = ctx.sent(RemoveRaftVoterRequestData)
    assert remove.message.voter_id == 4 and str(remove.message.voter_directory_id) == _dir(4)


def test_no_auto_join_when_disabled_or_before_kraft_version_1() -> None:
    voters = VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, _dir(i)), (_ep(i),), 0, 1) for i in (1, 2, 3)
    )
    for ctx in (
        _observer(voters=voters, auto_join=False),
        _observer(voters=voters, auto_join=True, kraft_version=0),
    ):
        ctx.respond(ctx._history[-1].destination, fetch_response(1, 5))
        assert ctx.sent(AddRaftVoterRequestData) == []
        assert [r.destination for r in ctx.sent(FetchRequestData)] == [1]


def test_a_follower_keeps_its_leaders_endpoint_when_the_leader_removes_itself() -> None:
    """The leader appends a set without itself; until that commits and it resigns, its
    followers must still reach it (the runtime drops connections to non-voters)."""
    voters = VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, _dir(i)), (_ep(i),), 0, 1) for i in (1, 2, 3, 4)
    )
    ctx = RaftTestContext(
        2,
        [1, 2, 3, 4],
        voter_set=voters,
        kraft_version=1,
        directory_id=_dir(2),
        endpoints=(_ep(2),),
    )
    ctx.request(1, begin_epoch(1, 5))  # no endpoint in the request: the voter set's
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.leader_endpoint == _ep(1)
    without_leader = voters.remove_voter(ReplicaKey(1, _dir(1)))
    assert without_leader is not None
    record = without_leader.to_voters_record()
    entry = LogEntry.of_control(ctx.node.log.end_offset, 5, record)
    ctx.respond(1, fetch_response(1, 5), (entry,))
    assert 1 not in ctx.node.voters
    ctx.flush()
    (fetch,) = ctx.sent(FetchRequestData)
    assert (fetch.destination, fetch.endpoint) == (1, _ep(1))


def test_an_observer_that_knows_the_leader_but_not_where_learns_it_later() -> None:
    """The leader named without NodeEndpoints before this replica has the voter set (a wiped
    voter rejoining): the next answer naming the same leader with its endpoint is taken
    (Kafka's "discovered more endpoints"); before, such an observer asked the bootstrap
    addresses forever (the nemesis found it under partitions)."""
    ctx = _observer()
    ctx.respond(ctx._history[-1].destination, fetch_response(1, 5, error=6))  # no endpoints
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.leader_endpoint is None
    ctx.advance(ctx.node.config.fetch_timeout_ms)  # the leader is unreachable: ask again
    (again,) = ctx.sent(FetchRequestData)
    assert again.destination in (-2, -3)
    ctx.respond(again.destination, _with_leader_endpoint(fetch_response(1, 5, error=6), 1))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.leader_endpoint == _ep(1)
    seen = len(ctx._history)
    lost = next(r for r in reversed(ctx._history) if r.destination == 1)
    ctx.handle(RequestFailed(1, lost.correlation_id))  # the endpoint-less send went nowhere
    ctx.advance(ctx.node.config.retry_backoff_ms + 1)
    assert (1, _ep(1)) in [(r.destination, r.endpoint) for r in ctx._history[seen:]]


def _with_endpoints(request: Any, leader: int) -> Any:
    cls = type(request).LeaderEndpoint
    return replace(
        request, leader_endpoints=[cls(name="CONTROLLER", host=f"h{leader}", port=9090 + leader)]
    )


def test_a_voter_without_the_new_leader_in_its_set_reaches_it_at_the_requests_endpoint() -> None:
    """The nemesis campaign (seed 1007): voter 3's set was [2, 3] while node 1, wiped and
    re-added, won its vote; node 3 followed leader 1 with no endpoint for it and dropped every
    Fetch, so leader 1 lost check-quorum every 1.5 s for 28 s. Kafka takes the leader's
    endpoints from the BeginQuorumEpoch request (v1), else from the voter set."""
    voters = VoterSet.from_nodes(VoterNode(ReplicaKey(i, _dir(i)), (_ep(i),), 0, 1) for i in (2, 3))
    ctx = RaftTestContext(
        3, [2, 3], voter_set=voters, kraft_version=1, directory_id=_dir(3), endpoints=(_ep(3),)
    )
    ctx.request(1, vote_request(5, 1, voter_id=3))
    assert ctx.response().message.topics[0].partitions[0].vote_granted
    seen = len(ctx._history)
    ctx.request(1, _with_endpoints(begin_epoch(1, 5), 1))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and (st.leader_id, st.leader_endpoint) == (1, _ep(1))
    ctx.flush()
    ctx.advance(1)
    fetches = [r for r in ctx._history[seen:] if isinstance(r.message, FetchRequestData)]
    assert fetches and {(r.destination, r.endpoint) for r in fetches} == {(1, _ep(1))}
    # the same from EndQuorumEpoch, at a newer epoch (the leader resigning names itself)
    ctx.request(1, _with_endpoints(end_epoch(1, 6, [3]), 1))
    st = ctx.node.state
    assert st.epoch == 6 and getattr(st, "leader_endpoint", None) in (None, _ep(1))


def test_a_resigning_leader_names_its_endpoints_in_end_quorum_epoch() -> None:
    """Kafka's `buildEndQuorumEpochRequest` sets LeaderEndpoints (v1); ours sent none."""
    voters = VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, _dir(i)), (_ep(i),), 0, 1) for i in (1, 2, 3)
    )
    ctx = RaftTestContext(
        1, [1, 2, 3], voter_set=voters, kraft_version=1, directory_id=_dir(1), endpoints=(_ep(1),)
    )
    ctx.become_leader()
    ctx.node.resign()
    ctx.flush()
    ends = ctx.sent(EndQuorumEpochRequestData)
    assert ends and all(
        [(e.name, e.host, e.port) for e in r.message.leader_endpoints]
        == [("CONTROLLER", "h1", 9091)]
        for r in ends
    )

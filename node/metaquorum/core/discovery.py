"""Where a replica looks for its leader (KIP-853 bootstrap servers; Kafka's `RequestManager`
bootstrap nodes, `maybeSendFetchToAnyBootstrap`, `Endpoints.fromFetchResponse`).

Role:
- the *bootstrap nodes* a replica without a reachable leader sends its discovery Fetch to: with
  `controller.quorum.bootstrap.servers`, one node per address with Kafka's pseudo-ids -2, -3, ...
  (sent with their endpoint: no voter set is needed, a `--no-initial-controllers` replica has
  none); without it (static `controller.quorum.voters`), the other voters of the current set;
- the endpoint a follower reaches its leader at: the `NodeEndpoints` of the response that named
  the leader (Kafka sends the leader's endpoints from Fetch v16), else the leader's entry in the
  voter set; and the leader endpoint this replica itself puts into its Fetch responses;
- a Begin/EndQuorumEpoch request's LeaderEndpoints: a voter that does not have the new leader
  in its voter set (it was re-added after a disk wipe, say) still reaches it.
Invariants: a pseudo-id is below -1, so it is never taken for a replica (no vote, no progress,
no observer entry); discovery never sends to this replica's own address; at most one discovery
request is in flight at a time (Kafka's `findReadyBootstrapServer`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from metaquorum.core.local_replica import BootstrapNode
from metaquorum.core.rng import randbelow
from metaquorum.core.states import FollowerState, LeaderState
from metaquorum.core.value import replace
from metaquorum.core.voter_set import ListenerEndpoint
from metaquorum.protocol.messages import FetchResponseData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext

FIRST_PSEUDO_ID = -2
NEVER = 2**62


def pseudo_nodes(
    servers: Sequence[ListenerEndpoint], local: Sequence[ListenerEndpoint]
) -> tuple[BootstrapNode, ...]:
    """Kafka's ids for bootstrap addresses: -2, -3, ... in configured order; this replica's own
    addresses are left out (asking oneself who leads teaches nothing)."""
    own = {(e.host, e.port) for e in local}
    return tuple(
        (FIRST_PSEUDO_ID - i, ep) for i, ep in enumerate(servers) if (ep.host, ep.port) not in own
    )


def bootstrap_nodes(ctx: RaftContext) -> tuple[BootstrapNode, ...]:
    if ctx.local.bootstrap_nodes:
        return ctx.local.bootstrap_nodes
    return tuple((v, None) for v in ctx.voters.sorted_ids() if v != ctx.local.id)


def send_fetch_to_any_bootstrap(
    ctx: RaftContext, now_ms: int, build: Callable[[], object] | None, *, one_at_a_time: bool = True
) -> int:
    """Kafka's `maybeSendFetchToAnyBootstrap`: the request `build` makes (None: nothing may
    be sent now) to a random ready bootstrap node, when none is in flight (`one_at_a_time`;
    an observer whose leader went quiet asks at once); returns the time to wait before the
    next try."""
    nodes = bootstrap_nodes(ctx)
    if not nodes:
        return NEVER
    requests = ctx.requests
    if build is not None and not (
        one_at_a_time and any(requests.has_inflight(nid, now_ms) for nid, _ in nodes)
    ):
        ready = [(nid, ep) for nid, ep in nodes if requests.is_ready(nid, now_ms)]
        if ready:
            nid, ep = ready[randbelow(ctx.rng, len(ready))]
            ctx.send(nid, build(), ep)
    pending = [requests.next_deadline_ms(nid) for nid, _ in nodes]
    return min((d for d in pending if d is not None and d > now_ms), default=NEVER)


def endpoint_of(ctx: RaftContext, replica_id: int) -> ListenerEndpoint | None:
    """A replica's endpoint on this node's controller listener: its own, a voter's, or the
    current leader's as learned from a response."""
    if replica_id == ctx.local.id:
        return next((e for e in ctx.local.endpoints if e.name == ctx.local.listener_name), None)
    voter = ctx.voters.node(replica_id)
    if voter is not None:
        found = voter.endpoint(ctx.local.listener_name)
        if found is not None:
            return found
    st = ctx.state
    if isinstance(st, FollowerState) and st.leader_id == replica_id:
        return st.leader_endpoint
    return None


class _NamedEndpoint(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


def request_leader_endpoint(
    ctx: RaftContext, endpoints: Sequence[_NamedEndpoint]
) -> ListenerEndpoint | None:
    """The leader's endpoint on this node's listener from a Begin/EndQuorumEpoch v1 request's
    LeaderEndpoints (Kafka's `Endpoints.fromBeginQuorumEpochRequest`); None when it names none
    (v0, or another listener): then the voter set's, as Kafka's `lastVoterSet().listeners`."""
    for e in endpoints:
        if e.name == ctx.local.listener_name:
            return ListenerEndpoint(e.name, e.host, e.port)
    return None


def learn_leader_endpoint(
    ctx: RaftContext, leader_id: int, epoch: int, endpoint: ListenerEndpoint | None
) -> None:
    """Kafka's `maybeTransition` "the replica has discovered more endpoints": a follower of
    this epoch's leader that does not know where the leader is (it learned the leader from an
    answer without NodeEndpoints, before it had the voter set) takes the endpoint an answer
    names; without it such an observer would ask the bootstrap servers forever."""
    st = ctx.state
    if (
        endpoint is not None
        and isinstance(st, FollowerState)
        and st.epoch == epoch
        and st.leader_id == leader_id
        and st.leader_endpoint is None
    ):
        ctx.update_state(replace(st, leader_endpoint=endpoint))


def leader_send_endpoint(ctx: RaftContext, st: FollowerState) -> ListenerEndpoint | None:
    """The endpoint to send with a request to the leader: only when the runtime cannot know
    it from the voter set (the leader is not a voter this replica knows of)."""
    return None if st.leader_id in ctx.voters else st.leader_endpoint


def from_fetch_response(
    ctx: RaftContext, leader_id: int, endpoints: Sequence[FetchResponseData.NodeEndpoint]
) -> ListenerEndpoint | None:
    """Kafka's `Endpoints.fromFetchResponse` on our listener, else the voter set's entry."""
    if leader_id < 0:
        return None
    for e in endpoints:
        if e.node_id == leader_id:
            return ListenerEndpoint(ctx.local.listener_name, e.host, e.port)
    voter = ctx.voters.node(leader_id)
    return voter.endpoint(ctx.local.listener_name) if voter is not None else None


def fetch_response_endpoints(ctx: RaftContext) -> list[FetchResponseData.NodeEndpoint]:
    """The leader's endpoint for a Fetch response's NodeEndpoints (v16+; the runtime strips
    it below): an observer that found this replica through a bootstrap address learns where
    the leader is."""
    st = ctx.state
    if isinstance(st, LeaderState):  # the hot path: built once per leadership
        if st.data.fetch_endpoints is None:
            st.data.fetch_endpoints = _node_endpoints(ctx, ctx.local.id)
        return st.data.fetch_endpoints
    if isinstance(st, FollowerState):
        return _node_endpoints(ctx, st.leader_id)
    return []


def _node_endpoints(ctx: RaftContext, leader: int) -> list[FetchResponseData.NodeEndpoint]:
    ep = endpoint_of(ctx, leader)
    if ep is None:
        return []
    return [FetchResponseData.NodeEndpoint(node_id=leader, host=ep.host, port=ep.port)]


def fetch_for_version(response: FetchResponseData, version: int) -> FetchResponseData:
    """NodeEndpoints exists from Fetch v16 (KIP-951), as Kafka's `RaftUtil` sets it."""
    if version >= 16 or not response.node_endpoints:
        return response
    return replace(response, node_endpoints=[])

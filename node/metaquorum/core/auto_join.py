"""Auto-join: an observer that may be a voter adds itself (KIP-853; Kafka 4.2+
`controller.quorum.auto.join.enable`, `KafkaRaftClient.shouldSendAddOrRemoveVoterRequest`).

Role: on a kraft.version >= 1 quorum, a replica that follows a leader as an observer and has a
directory id and a controller endpoint sends, at most once per fetch timeout, instead of a Fetch:
- RemoveRaftVoter of the voter entry with its own id and another directory id (its disk was
  replaced: the old key must go first, the leader refuses a second entry for an id), else
- AddRaftVoter of itself (`AckWhenCommitted=false`, as Kafka): the leader adds it once it has
  caught up (until then REQUEST_TIMED_OUT, and the observer asks again a period later).
Invariants: a voter never sends these (a voter by key is not an observer); nothing is sent
before the quorum runs kraft.version 1; the answers change nothing locally: the VotersRecord
that comes back through Fetch does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.rpc_common import directory_uuid
from metaquorum.protocol.messages import AddRaftVoterRequestData, RemoveRaftVoterRequestData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext
    from metaquorum.core.states import FollowerState


def should_send(ctx: RaftContext, st: FollowerState, now_ms: int) -> bool:
    return (
        bool(ctx.config.auto_join_enable)
        and now_ms >= st.auto_join_next_ms
        and not ctx.is_voter
        and ctx.local.directory_id is not None
        and any(e.name == ctx.local.listener_name for e in ctx.local.endpoints)
        and ctx.control.latest_kraft_version() >= 1
    )


def build_request(ctx: RaftContext) -> AddRaftVoterRequestData | RemoveRaftVoterRequestData:
    old = ctx.voters.node(ctx.local.id)
    if old is not None:
        return RemoveRaftVoterRequestData(
            cluster_id=ctx.local.cluster_id,
            voter_id=old.key.id,
            voter_directory_id=directory_uuid(old.key.directory_id),
        )
    return AddRaftVoterRequestData(
        cluster_id=ctx.local.cluster_id,
        timeout_ms=ctx.config.request_timeout_ms,
        voter_id=ctx.local.id,
        voter_directory_id=directory_uuid(ctx.local.directory_id),
        listeners=[
            AddRaftVoterRequestData.Listener(name=e.name, host=e.host, port=e.port)
            for e in ctx.local.endpoints
        ],
        ack_when_committed=False,
    )

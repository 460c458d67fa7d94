"""Add and remove controllers of a running quorum (KIP-853), as Kafka's admin client does for
`kafka-metadata-quorum add-controller / remove-controller`.

Role: find the leader through DescribeCluster, send it AddRaftVoter / RemoveRaftVoter, retry
while leadership moves (NOT_LEADER_OR_FOLLOWER, a lost connection), and turn every Kafka error
into one line naming the cause and the fix.
Invariants: a change is sent to the leader only; an answer other than NONE is never reported as
success; AddRaftVoter asks for the answer once the change is committed (AckWhenCommitted).
"""

from __future__ import annotations

from dataclasses import dataclass

from metaquorum.admin.client import AdminClient, AdminError, RetriableAdminError
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    AddRaftVoterResponseData,
    RemoveRaftVoterRequestData,
    RemoveRaftVoterResponseData,
)
from metaquorum.protocol.types import Uuid

ADD_RAFT_VOTER_VERSION = 1
REMOVE_RAFT_VOTER_VERSION = 0

FIXES = {
    Errors.DUPLICATE_VOTER: "it is already a voter; remove it first, or add another node",
    Errors.VOTER_NOT_FOUND: (
        "no such voter; check its id and directory id with `describe --status`"
    ),
    Errors.REQUEST_TIMED_OUT: (
        "the leader could not make the change now (another change in progress, a new leader "
        "not settled yet, or the new controller not caught up); retry in a few seconds"
    ),
    Errors.UNSUPPORTED_VERSION: (
        "the quorum runs kraft.version 0 (static controller.quorum.voters), whose voters "
        "cannot change; format it with --initial-controllers or --standalone instead"
    ),
}


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int


def _failure(what: str, code: int, message: str | None) -> AdminError:
    error = Errors(code)
    fix = FIXES.get(error, message or "see the leader's log")
    return AdminError(f"{what}: {error.name}: {fix}")


async def _to_leader(client: AdminClient, api: ApiKeys, version: int, request: object) -> object:
    cluster = await client._describe_cluster_once()
    leader = cluster.controllers.get(cluster.controller_id)
    if leader is None:
        raise RetriableAdminError("no active controller (the quorum has no leader yet)")
    answer = await client._request(leader, int(api), version, request)
    code = getattr(answer, "error_code", 0)
    if code == Errors.NOT_LEADER_OR_FOLLOWER:
        raise RetriableAdminError("the leader moved")
    return answer


async def add_controller(
    client: AdminClient, voter_id: int, directory_id: Uuid, listeners: list[Listener]
) -> None:
    request = AddRaftVoterRequestData(
        cluster_id=None,
        timeout_ms=int(client.timeout_s * 1000),
        voter_id=voter_id,
        voter_directory_id=directory_id,
        listeners=[
            AddRaftVoterRequestData.Listener(name=x.name, host=x.host, port=x.port)
            for x in listeners
        ],
        ack_when_committed=True,
    )

    async def once() -> object:
        return await _to_leader(client, ApiKeys.ADD_RAFT_VOTER, ADD_RAFT_VOTER_VERSION, request)

    answer = await client._retrying(once)
    assert isinstance(answer, AddRaftVoterResponseData)
    if answer.error_code != 0:
        raise _failure(f"add controller {voter_id}", answer.error_code, answer.error_message)


async def remove_controller(client: AdminClient, voter_id: int, directory_id: Uuid) -> None:
    request = RemoveRaftVoterRequestData(
        cluster_id=None, voter_id=voter_id, voter_directory_id=directory_id
    )

    async def once() -> object:
        return await _to_leader(
            client, ApiKeys.REMOVE_RAFT_VOTER, REMOVE_RAFT_VOTER_VERSION, request
        )

    answer = await client._retrying(once)
    assert isinstance(answer, RemoveRaftVoterResponseData)
    if answer.error_code != 0:
        raise _failure(f"remove controller {voter_id}", answer.error_code, answer.error_message)

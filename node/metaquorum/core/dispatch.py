"""Which handler answers which RPC (Kafka's `KafkaRaftClient.handleRequest` / `handleResponse`
switch on the api key): the core dispatches by message *type*, never by class-name strings.

Invariant: every Raft RPC the runtime hands the core (Vote, BeginQuorumEpoch, EndQuorumEpoch,
Fetch, DescribeQuorum, FetchSnapshot, Add/Remove/UpdateRaftVoter) has exactly one request
handler, and every one the core
sends has exactly one response handler; a message of any other type is ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from metaquorum.core import (
    add_voter,
    begin_quorum_epoch,
    end_quorum_epoch,
    fetch,
    fetch_snapshot,
    remove_voter,
    update_voter,
    vote,
)
from metaquorum.core import describe_quorum as describe
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    ApiVersionsResponseData,
    BeginQuorumEpochRequestData,
    BeginQuorumEpochResponseData,
    DescribeQuorumRequestData,
    EndQuorumEpochRequestData,
    EndQuorumEpochResponseData,
    FetchRequestData,
    FetchResponseData,
    FetchSnapshotRequestData,
    FetchSnapshotResponseData,
    RemoveRaftVoterRequestData,
    UpdateRaftVoterRequestData,
    UpdateRaftVoterResponseData,
    VoteRequestData,
    VoteResponseData,
)

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext

REQUEST_HANDLERS: dict[type, Callable[[RaftContext, RequestReceived], None]] = {
    VoteRequestData: vote.handle_vote_request,
    BeginQuorumEpochRequestData: begin_quorum_epoch.handle_begin_quorum_epoch_request,
    EndQuorumEpochRequestData: end_quorum_epoch.handle_end_quorum_epoch_request,
    FetchRequestData: fetch.handle_fetch_request,
    DescribeQuorumRequestData: describe.handle_describe_quorum_request,
    FetchSnapshotRequestData: fetch_snapshot.handle_fetch_snapshot_request,
    AddRaftVoterRequestData: add_voter.handle_add_raft_voter_request,
    RemoveRaftVoterRequestData: remove_voter.handle_remove_raft_voter_request,
    UpdateRaftVoterRequestData: update_voter.handle_update_raft_voter_request,
}
RESPONSE_HANDLERS: dict[type, Callable[[RaftContext, ResponseReceived], None]] = {
    VoteResponseData: vote.handle_vote_response,
    BeginQuorumEpochResponseData: begin_quorum_epoch.handle_begin_quorum_epoch_response,
    EndQuorumEpochResponseData: end_quorum_epoch.handle_end_quorum_epoch_response,
    FetchResponseData: fetch.handle_fetch_response,
    FetchSnapshotResponseData: fetch_snapshot.handle_fetch_snapshot_response,
    ApiVersionsResponseData: add_voter.handle_api_versions_response,
    UpdateRaftVoterResponseData: update_voter.handle_update_raft_voter_response,
}

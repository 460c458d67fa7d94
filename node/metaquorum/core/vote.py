"""Vote RPC and the election states that send it (KIP-595 §Vote, KIP-996 PreVote, Vote v2).

Role: `build_vote_request`, `handle_vote_request`, `build_vote_response`, `handle_vote_response`
as in Kafka's `KafkaRaftClient`, and the polling of Prospective and Candidate.
Invariants:
- a standard vote is granted at most once per epoch, and the grant is made durable (through the
  transition to Unattached-voted, which emits `PersistElectionState`) before the reply is
  emitted; a pre-vote never changes durable state;
- the log up-to-date rule compares (last epoch, end offset) lexicographically;
- split-vote avoidance (metaquorum's own, pre-votes only, so safety is Kafka's): a replica
  that is itself campaigning (Prospective or Candidate) grants a pre-vote to a strictly more
  up-to-date log, or to an equally up-to-date one only from a lower replica id; and a
  Prospective asked for a pre-vote by a voter that rejected its own asks that voter again.
  Two followers whose fetch timeouts expire within a round trip (both were answered by the
  same leader append) then elect one of them in one round instead of splitting their votes;
- a Prospective that wins a pre-vote majority becomes Candidate at epoch + 1; one that is
  rejected by a majority or times out goes back to Follower (leader known) or Unattached;
- a Candidate that is rejected waits out its election timeout (Kafka 4.3
  `maybeHandleElectionLoss`), then goes back to Prospective at the same epoch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core.context import POLL_AGAIN, PollResult, random_election_timeout_ms
from metaquorum.core.effects import SendResponse
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.rpc_common import (
    PARTITION,
    directory_uuid,
    is_valid_voter_key,
    maybe_handle_common_response,
    quorum_partition,
    replica_key,
    request_prelude,
    response_failed,
    to_error,
    validate_voter_only_request,
)
from metaquorum.core.states import CandidateState, ProspectiveState, UnattachedState
from metaquorum.core.value import replace
from metaquorum.core.vote_tally import VoteTally
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import VoteRequestData, VoteResponseData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext


def build_vote_request(ctx: RaftContext, destination: int, pre_vote: bool) -> VoteRequestData:
    end = ctx.log.end_offset_and_epoch()
    partition = VoteRequestData.PartitionData(
        partition_index=PARTITION,
        replica_epoch=ctx.state.epoch,
        replica_id=ctx.local.id,
        last_offset_epoch=end.epoch,
        last_offset=end.offset,
        pre_vote=pre_vote,
        replica_directory_id=directory_uuid(ctx.local.directory_id),
        voter_directory_id=directory_uuid(ctx.voters.key_of(destination).directory_id),
    )
    return VoteRequestData(
        cluster_id=ctx.local.cluster_id,
        voter_id=destination,
        topics=[VoteRequestData.TopicData(topic_name=ctx.local.topic.name, partitions=[partition])],
    )


def build_vote_response(ctx: RaftContext, error: Errors, granted: bool) -> VoteResponseData:
    partition = VoteResponseData.PartitionData(
        partition_index=PARTITION,
        error_code=int(error),
        leader_id=ctx.leader_id,
        leader_epoch=ctx.state.epoch,
        vote_granted=granted,
    )
    return VoteResponseData(
        error_code=0,
        topics=[
            VoteResponseData.TopicData(topic_name=ctx.local.topic.name, partitions=[partition])
        ],
    )


def _respond(ctx: RaftContext, event: RequestReceived, message: object) -> None:
    ctx.emit(SendResponse(event.source, event.correlation_id, message))


def handle_vote_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, VoteRequestData)
    p = request_prelude(
        ctx,
        request.cluster_id,
        quorum_partition(request.topics, ctx.local.topic.name),
        lambda error: _respond(ctx, event, VoteResponseData(error_code=int(error))),
    )
    if p is None:
        return
    pre_vote = p.pre_vote
    illegal_epoch = (
        p.last_offset_epoch > p.replica_epoch
        if pre_vote
        else (p.last_offset_epoch >= p.replica_epoch)
    )
    if p.last_offset < 0 or p.last_offset_epoch < 0 or illegal_epoch:
        _respond(ctx, event, build_vote_response(ctx, Errors.INVALID_REQUEST, False))
        return
    error = validate_voter_only_request(ctx, p.replica_id, p.replica_epoch)
    if error != Errors.NONE:
        _respond(ctx, event, build_vote_response(ctx, error, False))
        return
    if p.replica_epoch > ctx.state.epoch:
        ctx.transition_to_unattached(p.replica_epoch)
    if not is_valid_voter_key(ctx, request.voter_id, p.voter_directory_id):
        _respond(ctx, event, build_vote_response(ctx, Errors.INVALID_VOTER_KEY, False))
        return
    candidate = replica_key(p.replica_id, p.replica_directory_id)
    theirs = OffsetAndEpoch(p.last_offset_epoch, p.last_offset)
    ours = ctx.log.end_offset_and_epoch()
    granted = ctx.state.can_grant_vote(candidate, theirs >= ours, pre_vote)
    st = ctx.state
    if pre_vote and isinstance(st, ProspectiveState | CandidateState):
        granted = granted and (theirs > ours or candidate.id < ctx.local.id)
        if isinstance(st, ProspectiveState):
            # It campaigns too: its rejection of our pre-vote, given while it still followed,
            # is asked again once (vote_tally.py, split-vote avoidance).
            tally = st.tally.campaign_seen(candidate.id)
            if tally is not st.tally:
                st = replace(st, tally=tally)
                ctx.update_state(st)
    if granted and not pre_vote and isinstance(st, UnattachedState) and st.voted_key is None:
        # Kafka's `unattachedAddVotedState`; durable before the reply (PersistElectionState).
        ctx.transition_to(
            replace(
                st,
                election_deadline_ms=ctx.now_ms + random_election_timeout_ms(ctx),
                voted_key=candidate,
                high_watermark=ctx.high_watermark,
            )
        )
    elif granted and not pre_vote and isinstance(st, ProspectiveState) and st.voted_key is None:
        # Kafka's `prospectiveAddVotedState`: it stays Prospective (a fresh pre-vote round and
        # election timer), now with its vote recorded.
        ctx.transition_to(
            replace(
                st,
                election_deadline_ms=ctx.now_ms + random_election_timeout_ms(ctx),
                tally=VoteTally.start(ctx.voters.voter_ids, ctx.local.id),
                voted_key=candidate,
                high_watermark=ctx.high_watermark,
            )
        )
    _respond(ctx, event, build_vote_response(ctx, Errors.NONE, granted))


def handle_vote_response(ctx: RaftContext, event: ResponseReceived) -> None:
    response = event.message
    assert isinstance(response, VoteResponseData)
    top = to_error(response.error_code)
    if top == Errors.UNSUPPORTED_VERSION and isinstance(ctx.state, ProspectiveState):
        # Kafka 4.3: a voter that does not know PreVote; go on to a real election at once.
        ctx.transition_to_candidate()
        return
    if top != Errors.NONE or len(response.topics) != 1:
        response_failed(ctx, event.source)
        return
    partitions = response.topics[0].partitions
    if len(partitions) != 1:
        response_failed(ctx, event.source)
        return
    p = partitions[0]
    error = to_error(p.error_code)
    if maybe_handle_common_response(ctx, error, p.leader_id, p.leader_epoch):
        return
    if error != Errors.NONE:
        response_failed(ctx, event.source)
        return
    st = ctx.state
    if isinstance(st, ProspectiveState | CandidateState):
        tally = st.tally.record(event.source, p.vote_granted)
        if tally is st.tally:
            return
        ctx.update_state(replace(st, tally=tally))


def _send_vote_requests(
    ctx: RaftContext, voters: frozenset[int], pre_vote: bool, now_ms: int
) -> int:
    deadline = 2**62
    for voter in sorted(voters):
        if voter == ctx.local.id:
            continue
        if ctx.requests.is_ready(voter, now_ms):
            ctx.send(voter, build_vote_request(ctx, voter, pre_vote))
        nd = ctx.requests.next_deadline_ms(voter)
        if nd is not None and nd > now_ms:
            deadline = min(deadline, nd)
    return deadline


def poll_prospective(ctx: RaftContext, st: ProspectiveState, now_ms: int) -> PollResult:
    shutting_down = ctx.shutdown_started_ms is not None
    if st.tally.is_granted:
        ctx.transition_to_candidate()
        return POLL_AGAIN
    timed_out = now_ms >= st.election_deadline_ms and not shutting_down
    if st.tally.is_rejected or timed_out:
        # KIP-996: the pre-vote was lost; go back to the leader if there was one. Kafka's
        # `prospectiveTransitionAfterElectionLoss`: Unattached keeps the remaining timer
        # unless the pre-vote was rejected.
        if st.leader_id is not None:
            ctx.transition_to_follower(st.epoch, st.leader_id)
        else:
            ctx.transition_to_unattached(st.epoch)
        return POLL_AGAIN
    sent = _send_vote_requests(ctx, st.tally.unrecorded(), True, now_ms)
    return sent if shutting_down else min(sent, st.election_deadline_ms)


def poll_candidate(ctx: RaftContext, st: CandidateState, now_ms: int) -> PollResult:
    """Kafka 4.3 `pollCandidate`: a lost or timed-out election goes back to Prospective when
    the (randomised) election timeout expires; no other backoff."""
    shutting_down = ctx.shutdown_started_ms is not None
    if st.tally.is_granted:
        ctx.transition_to_leader()
        return POLL_AGAIN
    if shutting_down:
        # Kafka: a shutting-down candidate goes on with this election, never a new one.
        return _send_vote_requests(ctx, st.tally.unrecorded(), False, now_ms)
    if now_ms >= st.election_deadline_ms:
        ctx.transition_to_prospective()
        return POLL_AGAIN
    if st.tally.is_rejected:
        return st.election_deadline_ms
    sent = _send_vote_requests(ctx, st.tally.unrecorded(), False, now_ms)
    return min(sent, st.election_deadline_ms)

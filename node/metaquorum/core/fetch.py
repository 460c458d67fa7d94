"""Fetch RPC: the leader's side, the follower's side and the long-poll purgatory.

KIP-595 §Fetch, KIP-1166 (the follower's HW in the request), Kafka's `handleFetchRequest`,
`tryCompleteFetchRequest`, `handleFetchResponse`, `buildFetchRequest`.
Role: replication. The leader validates the request (cluster id, the one metadata partition,
`MaxWaitMs >= 0`, `FetchOffset >= 0`, `0 <= LastFetchedEpoch <= CurrentLeaderEpoch`, then the
leader epoch), answers with records, a DivergingEpoch, or parks the fetch; the follower
truncates on DivergingEpoch, appends, flushes, and only then fetches again; on a SnapshotId
it switches to FetchSnapshot (`fetch_snapshot.py`) until the snapshot is loaded.
Invariants:
- a voter's fetch offset is only counted after the offset/epoch validated against the
  leader's log (log matching), and the follower only sends offsets it has flushed; only such a
  validated fetch (or a FetchSnapshot) counts for check-quorum;
- a follower never truncates below its HW (Kafka raises), and it applies the leader's HW only
  after truncating/appending, capped at its own LEO (KAFKA-14704);
- a parked fetch returns on new data, on HW movement past the follower's HW, or at MaxWaitMs.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from metaquorum.core import auto_join, check_quorum, discovery, fetch_snapshot, update_voter
from metaquorum.core.effects import AppendEntries, FlushLog, SendResponse, TruncateLog
from metaquorum.core.errors import TruncationBelowHighWatermark
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.core.fetch_purgatory import ParkedFetch
from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.log import LogEntry, ValidationKind
from metaquorum.core.rpc_common import (
    PARTITION,
    directory_uuid,
    maybe_handle_common_response,
    replica_key,
    request_prelude,
    response_failed,
    single_partition,
    to_error,
    validate_leader_only_request,
)
from metaquorum.core.states import FollowerState, LeaderState, UnattachedState
from metaquorum.core.value import replace, value
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import FetchRequestData, FetchResponseData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext

MAX_FETCH_ENTRIES = 256
INT64_MAX = 0x7FFFFFFFFFFFFFFF
MAX_FETCH_SIZE_BYTES = 8 * 1024 * 1024


ParkedRequest = tuple[int, int, FetchRequestData]


# --- follower side -------------------------------------------------------------------------
def build_fetch_request(ctx: RaftContext) -> FetchRequestData:
    end = ctx.log.end_offset_and_epoch()
    hw = ctx.high_watermark
    partition = FetchRequestData.FetchPartition(
        partition=PARTITION,
        current_leader_epoch=ctx.state.epoch,
        fetch_offset=end.offset,
        last_fetched_epoch=end.epoch,
        log_start_offset=ctx.log.start_offset,
        high_watermark=-1 if hw is None else hw,
        replica_directory_id=directory_uuid(ctx.local.directory_id),
    )
    return FetchRequestData(
        cluster_id=ctx.local.cluster_id,
        replica_state=FetchRequestData.ReplicaState(replica_id=ctx.local.id, replica_epoch=-1),
        max_wait_ms=ctx.config.fetch_max_wait_ms,
        max_bytes=MAX_FETCH_SIZE_BYTES,
        topics=[
            FetchRequestData.FetchTopic(
                topic=ctx.local.topic.name, topic_id=ctx.local.topic.id, partitions=[partition]
            )
        ],
    )


def may_fetch(ctx: RaftContext) -> bool:
    """The durability barrier: fetch (acknowledge our LEO) only once it is all flushed."""
    return ctx.log.flushed_offset >= ctx.log.end_offset


def poll_follower(ctx: RaftContext, st: FollowerState, now_ms: int) -> int:
    deadline = st.fetch_deadline_ms
    if not ctx.is_voter and now_ms >= st.fetch_deadline_ms:
        # An observer that lost its leader asks a bootstrap node (Kafka's
        # `maybeSendFetchToBestNode` -> `maybeSendFetchToAnyBootstrap`).
        deadline = now_ms + ctx.config.fetch_timeout_ms
        ctx.update_state(replace(st, fetch_deadline_ms=deadline))
        build = partial(build_fetch_request, ctx) if may_fetch(ctx) else None
        wait = discovery.send_fetch_to_any_bootstrap(ctx, now_ms, build, one_at_a_time=False)
        return min(deadline, wait)
    target = st.leader_id
    if may_fetch(ctx) and ctx.requests.is_ready(target, now_ms):
        period_end = now_ms + ctx.config.fetch_timeout_ms
        if update_voter.should_send(ctx, st, now_ms):
            ctx.update_state(replace(_follower(ctx), update_voter_next_ms=period_end))
            request: object = update_voter.build_request(ctx)
        elif auto_join.should_send(ctx, st, now_ms):
            ctx.update_state(replace(_follower(ctx), auto_join_next_ms=period_end))
            request = auto_join.build_request(ctx)
        elif st.fetching_snapshot is not None:
            snapshot_id, received = st.fetching_snapshot
            request = fetch_snapshot.build_fetch_snapshot_request(ctx, snapshot_id, len(received))
        else:
            request = build_fetch_request(ctx)
        ctx.send(target, request, discovery.leader_send_endpoint(ctx, st))
    nd = ctx.requests.next_deadline_ms(target)
    if nd is not None and nd > now_ms:
        deadline = min(deadline, nd)
    return deadline


def _follower(ctx: RaftContext) -> FollowerState:
    """The current state, a Follower (`poll_follower` may be handed a modified copy)."""
    st = ctx.state
    assert isinstance(st, FollowerState)
    return st


def poll_unattached(ctx: RaftContext, st: UnattachedState, now_ms: int) -> int:
    """Discover the leader by fetching from a random bootstrap node (the bootstrap servers, or
    the other voters of a static quorum), one request at a time."""
    build = partial(build_fetch_request, ctx) if may_fetch(ctx) else None
    return discovery.send_fetch_to_any_bootstrap(ctx, now_ms, build)


def handle_fetch_response(ctx: RaftContext, event: ResponseReceived) -> None:
    response = event.message
    assert isinstance(response, FetchResponseData)
    if response.error_code != 0 or len(response.responses) != 1:
        response_failed(ctx, event.source)
        return
    partitions = response.responses[0].partitions
    if len(partitions) != 1:
        response_failed(ctx, event.source)
        return
    p = partitions[0]
    error = to_error(p.error_code)
    leader = p.current_leader
    endpoint = discovery.from_fetch_response(ctx, leader.leader_id, response.node_endpoints)
    if maybe_handle_common_response(ctx, error, leader.leader_id, leader.leader_epoch, endpoint):
        if error != Errors.NONE:
            ctx.requests.back_off(event.source, ctx.now_ms)
        return
    st = ctx.state
    if error != Errors.NONE:
        ctx.requests.back_off(event.source, ctx.now_ms)
        return
    if not isinstance(st, FollowerState) or event.source != st.leader_id:
        return
    if p.diverging_epoch.epoch >= 0:
        truncate_on_divergence(
            ctx, OffsetAndEpoch(p.diverging_epoch.epoch, p.diverging_epoch.end_offset)
        )
    elif p.snapshot_id.epoch >= 0 and p.snapshot_id.end_offset >= 0:
        # The leader wants us to fetch its snapshot first (KIP-630): FetchSnapshot from 0.
        sid = OffsetAndEpoch(p.snapshot_id.epoch, p.snapshot_id.end_offset)
        st = replace(st, fetching_snapshot=(sid, b""))
    else:
        entries = event.entries
        if entries and entries[0].offset == ctx.log.end_offset:
            append_as_follower(ctx, entries)
        if p.high_watermark >= 0:
            new_hw = min(p.high_watermark, ctx.log.end_offset)
            if st.high_watermark is None or new_hw > st.high_watermark:
                st = replace(st, high_watermark=new_hw)
    ctx.update_state(
        replace(st, fetch_deadline_ms=ctx.now_ms + ctx.config.fetch_timeout_ms, has_fetched=True)
    )


def truncate_on_divergence(ctx: RaftContext, diverging: OffsetAndEpoch) -> None:
    offset = ctx.log.truncation_offset_for(diverging)
    hw = ctx.high_watermark
    if hw is not None and offset < hw:
        raise TruncationBelowHighWatermark(f"leader asked to truncate to {offset} below HW {hw}")
    if offset < ctx.log.end_offset:
        ctx.log.truncate_to(offset)
        ctx.emit(TruncateLog(offset))


def append_as_follower(ctx: RaftContext, entries: tuple[LogEntry, ...]) -> None:
    ctx.log.append(entries)
    ctx.emit(AppendEntries(entries))
    ctx.emit(FlushLog(ctx.log.end_offset))


# --- leader side ---------------------------------------------------------------------------
def _replica_id(request: FetchRequestData) -> int:
    rid = request.replica_state.replica_id
    return rid if rid >= 0 else request.replica_id


def build_fetch_response(
    ctx: RaftContext,
    error: Errors,
    diverging: OffsetAndEpoch | None = None,
    *,
    snapshot: OffsetAndEpoch | None = None,
) -> FetchResponseData:
    hw = ctx.high_watermark if error == Errors.NONE else None
    diverging_epoch = FetchResponseData.EpochEndOffset()
    if diverging is not None:
        diverging_epoch = FetchResponseData.EpochEndOffset(
            epoch=diverging.epoch, end_offset=diverging.offset
        )
    partition = FetchResponseData.PartitionData(
        partition_index=PARTITION,
        error_code=int(error),
        high_watermark=-1 if hw is None else hw,
        log_start_offset=ctx.log.start_offset,
        diverging_epoch=diverging_epoch,
        snapshot_id=FetchResponseData.SnapshotId()
        if snapshot is None
        else FetchResponseData.SnapshotId(end_offset=snapshot.offset, epoch=snapshot.epoch),
        current_leader=FetchResponseData.LeaderIdAndEpoch(
            leader_id=ctx.leader_id, leader_epoch=ctx.state.epoch
        ),
    )
    return FetchResponseData(
        responses=[
            FetchResponseData.FetchableTopicResponse(
                topic=ctx.local.topic.name, topic_id=ctx.local.topic.id, partitions=[partition]
            )
        ],
        node_endpoints=discovery.fetch_response_endpoints(ctx),
    )


def is_voter_fetch(ctx: RaftContext, replica_id: int, p: FetchRequestData.FetchPartition) -> bool:
    """Is the fetcher a voter by its key (KIP-853)? Decided once per request: a voter's id
    with another directory id (a wiped disk) is an observer's fetch."""
    return ctx.voters.is_voter(replica_key(replica_id, p.replica_directory_id))


@value
class FetchCompletion:
    """What `try_complete_fetch_request` decided: the response and its records, whether the
    fetcher diverged (or must load a snapshot), and whether its offset moved the HW (then
    parked fetches may complete: `complete_purgatory`)."""

    response: FetchResponseData
    entries: tuple[LogEntry, ...] = ()
    diverged: bool = False
    hw_moved: bool = False


def try_complete_fetch_request(
    ctx: RaftContext,
    replica_id: int,
    p: FetchRequestData.FetchPartition,
    voter: bool,
) -> FetchCompletion:
    """Kafka's `tryCompleteFetchRequest`. `voter`: the fetcher is a voter by its key
    (`is_voter_fetch`)."""
    error = validate_leader_only_request(ctx, p.current_leader_epoch)
    if error != Errors.NONE:
        return FetchCompletion(build_fetch_response(ctx, error))
    valid = ctx.log.validate_offset_and_epoch(p.fetch_offset, p.last_fetched_epoch)
    if valid.kind is ValidationKind.SNAPSHOT:
        snapshot = valid.offset_and_epoch
        return FetchCompletion(build_fetch_response(ctx, Errors.NONE, snapshot=snapshot), (), True)
    if valid.kind is ValidationKind.DIVERGING:
        diverging = valid.offset_and_epoch
        return FetchCompletion(build_fetch_response(ctx, Errors.NONE, diverging), (), True)
    leader = ctx.state
    assert isinstance(leader, LeaderState)
    entries = tuple(ctx.log.read(p.fetch_offset, MAX_FETCH_ENTRIES))
    hw_moved = False
    if replica_id >= 0:
        # Kafka's `updateReplicaState`: only a validated fetch counts, for the HW and for
        # check-quorum; caught-up is measured against the leader's *flushed* end offset.
        key = replica_key(replica_id, p.replica_directory_id)
        hw_moved = leader.data.progress.update_replica(
            replica_id,
            p.fetch_offset,
            ctx.log.flushed_offset,
            ctx.now_ms,
            None if voter else key,
        )
        if voter:
            check_quorum.update_check_quorum_for_following_voter(ctx, key)
    return FetchCompletion(build_fetch_response(ctx, Errors.NONE), entries, False, hw_moved)


def handle_fetch_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, FetchRequestData)

    def respond(message: FetchResponseData, entries: tuple[LogEntry, ...] = ()) -> None:
        ctx.emit(SendResponse(event.source, event.correlation_id, message, entries))

    p = request_prelude(
        ctx,
        request.cluster_id,
        single_partition(
            request.topics,
            lambda t: t.topic_id == ctx.local.topic.id,
            lambda t: t.partitions,
            lambda p: p.partition,
        ),
        lambda error: respond(FetchResponseData(error_code=int(error))),
    )
    if p is None:
        return
    if (
        request.max_wait_ms < 0
        or p.fetch_offset < 0
        or p.last_fetched_epoch < 0
        or p.last_fetched_epoch > p.current_leader_epoch
    ):
        respond(build_fetch_response(ctx, Errors.INVALID_REQUEST))
        return
    replica_id = _replica_id(request)
    voter = is_voter_fetch(ctx, replica_id, p)
    leader = ctx.state
    if voter and isinstance(leader, LeaderState) and p.current_leader_epoch == ctx.state.epoch:
        leader.data.progress.fetch_arrived(replica_id, event.source)
    done = try_complete_fetch_request(ctx, replica_id, p, voter)
    response, entries, diverged, hw_moved = (
        done.response,
        done.entries,
        done.diverged,
        done.hw_moved,
    )
    part = response.responses[0].partitions[0]
    hw = ctx.high_watermark
    follower_hw = None if p.high_watermark == INT64_MAX else p.high_watermark
    hw_stale = hw is not None and follower_hw is not None and follower_hw < hw
    if part.error_code != 0 or entries or request.max_wait_ms == 0 or diverged or hw_stale:
        _note_response_sent(ctx, replica_id, voter, response, event.source)
        respond(response, entries)
    else:
        parked = ParkedFetch(
            replica_id,
            event.correlation_id,
            p.fetch_offset,
            follower_hw,
            ctx.now_ms + request.max_wait_ms,
            (event.source, event.correlation_id, request),
        )
        st = ctx.state
        assert isinstance(st, LeaderState)  # only a leader parks (errors are answered at once)
        replaced = st.data.purgatory.park(parked)
        if replaced is not None and complete_parked_fetch(ctx, replaced):
            hw_moved = True
    if hw_moved:
        complete_purgatory(ctx)


def complete_parked_fetch(ctx: RaftContext, parked: ParkedFetch[ParkedRequest]) -> bool:
    """Answer one parked fetch now; True when its offset moved the HW."""
    source, correlation_id, request = parked.request
    p = request.topics[0].partitions[0]
    voter = is_voter_fetch(ctx, parked.replica_id, p)
    hw_moved = False
    if isinstance(ctx.state, LeaderState):
        completion = try_complete_fetch_request(ctx, parked.replica_id, p, voter)
        response, entries, hw_moved = completion.response, completion.entries, completion.hw_moved
    else:
        response, entries = build_fetch_response(ctx, Errors.NOT_LEADER_OR_FOLLOWER), ()
        if ctx.state.epoch > request.topics[0].partitions[0].current_leader_epoch:
            response = build_fetch_response(ctx, Errors.FENCED_LEADER_EPOCH)
    _note_response_sent(ctx, parked.replica_id, voter, response, source)
    ctx.emit(SendResponse(source, correlation_id, response, entries))
    return hw_moved


def _note_response_sent(
    ctx: RaftContext, replica_id: int, voter: bool, response: FetchResponseData, source: int
) -> None:
    """A successful response to a voter (by key) on inbound connection `source`: the read
    lease's send time."""
    st = ctx.state
    if (
        voter
        and isinstance(st, LeaderState)
        and response.responses[0].partitions[0].error_code == 0
    ):
        st.data.progress.response_sent(replica_id, ctx.now_ms, source)


def complete_purgatory(ctx: RaftContext) -> None:
    """Answer every parked fetch that now has data, a newer HW, or has expired."""
    while True:
        st = ctx.state
        if not isinstance(st, LeaderState):
            return
        done = st.data.purgatory.complete(ctx.log.end_offset, ctx.high_watermark, ctx.now_ms)
        hw_moved = False
        for parked in done:
            if complete_parked_fetch(ctx, parked):
                hw_moved = True
        if not hw_moved:
            return

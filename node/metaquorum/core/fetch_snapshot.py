"""FetchSnapshot RPC (KIP-630 §FetchSnapshot; v1 per KIP-853).

Role: a follower whose fetch offset lies inside the leader's snapshot (the leader answered a
Fetch with a SnapshotId) downloads that snapshot in chunks by byte position, then loads it
(`InstallSnapshot`: the log restarts empty at the snapshot's end offset) and resumes Fetch.
The leader serves chunks of at most `MaxBytes` from `Position`.
Invariants: chunks are appended only at the exact position already received (duplicates and
stale chunks are ignored); the snapshot is installed only when `Size` bytes arrived; the
leader answers SNAPSHOT_NOT_FOUND for any id but its current snapshot and
POSITION_OUT_OF_RANGE outside [0, size); an installed snapshot is committed data, so the
follower's HW becomes at least its end offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaquorum.core import check_quorum
from metaquorum.core.effects import InstallSnapshot, SendResponse
from metaquorum.core.events import RequestReceived, ResponseReceived
from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.log import Snapshot
from metaquorum.core.rpc_common import (
    PARTITION,
    directory_uuid,
    maybe_handle_common_response,
    replica_key,
    request_prelude,
    response_failed,
    to_error,
    validate_leader_only_request,
)
from metaquorum.core.states import FollowerState
from metaquorum.core.value import replace
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import FetchSnapshotRequestData, FetchSnapshotResponseData

if TYPE_CHECKING:
    from metaquorum.core.context import RaftContext

SNAPSHOT_CHUNK_BYTES = 8 * 1024 * 1024  # Kafka sends MAX_FETCH_SIZE_BYTES


def build_fetch_snapshot_request(
    ctx: RaftContext, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int | None = None
) -> FetchSnapshotRequestData:
    partition = FetchSnapshotRequestData.PartitionSnapshot(
        partition=PARTITION,
        current_leader_epoch=ctx.state.epoch,
        snapshot_id=FetchSnapshotRequestData.SnapshotId(
            end_offset=snapshot_id.offset, epoch=snapshot_id.epoch
        ),
        position=position,
        replica_directory_id=directory_uuid(ctx.local.directory_id),
    )
    return FetchSnapshotRequestData(
        cluster_id=ctx.local.cluster_id,
        replica_id=ctx.local.id,
        max_bytes=ctx.config.snapshot_chunk_bytes if max_bytes is None else max_bytes,
        topics=[
            FetchSnapshotRequestData.TopicSnapshot(
                name=ctx.local.topic.name, partitions=[partition]
            )
        ],
    )


def build_fetch_snapshot_response(
    ctx: RaftContext,
    error: Errors,
    snapshot_id: OffsetAndEpoch | None = None,
    *,
    size: int = 0,
    position: int = 0,
    chunk: bytes | None = None,
) -> FetchSnapshotResponseData:
    sid = FetchSnapshotResponseData.SnapshotId()
    if snapshot_id is not None:
        sid = FetchSnapshotResponseData.SnapshotId(
            end_offset=snapshot_id.offset, epoch=snapshot_id.epoch
        )
    partition = FetchSnapshotResponseData.PartitionSnapshot(
        index=PARTITION,
        error_code=int(error),
        snapshot_id=sid,
        current_leader=FetchSnapshotResponseData.LeaderIdAndEpoch(
            leader_id=ctx.leader_id, leader_epoch=ctx.state.epoch
        ),
        size=size,
        position=position,
        unaligned_records=chunk,
    )
    return FetchSnapshotResponseData(
        topics=[
            FetchSnapshotResponseData.TopicSnapshot(
                name=ctx.local.topic.name, partitions=[partition]
            )
        ]
    )


def handle_fetch_snapshot_request(ctx: RaftContext, event: RequestReceived) -> None:
    request = event.message
    assert isinstance(request, FetchSnapshotRequestData)

    def respond(message: FetchSnapshotResponseData) -> None:
        ctx.emit(SendResponse(event.source, event.correlation_id, message))

    one = len(request.topics) == 1 and len(request.topics[0].partitions) == 1
    p = request_prelude(
        ctx,
        request.cluster_id,
        request.topics[0].partitions[0] if one else None,
        lambda error: respond(FetchSnapshotResponseData(error_code=int(error))),
    )
    if p is None:
        return
    topic = request.topics[0]
    if topic.name != ctx.local.topic.name or p.partition != PARTITION:
        respond(build_fetch_snapshot_response(ctx, Errors.UNKNOWN_TOPIC_OR_PARTITION))
        return
    error = validate_leader_only_request(ctx, p.current_leader_epoch)
    if error != Errors.NONE:
        respond(build_fetch_snapshot_response(ctx, error))
        return
    wanted = OffsetAndEpoch(p.snapshot_id.epoch, p.snapshot_id.end_offset)
    snap = ctx.log.snapshot
    if snap is None or snap.snapshot_id != wanted:
        respond(build_fetch_snapshot_response(ctx, Errors.SNAPSHOT_NOT_FOUND, wanted))
        return
    size = len(snap.payload)
    if p.position < 0 or p.position >= size:
        respond(build_fetch_snapshot_response(ctx, Errors.POSITION_OUT_OF_RANGE, wanted))
        return
    chunk = snap.payload[p.position : p.position + max(0, request.max_bytes)]
    key = replica_key(request.replica_id, p.replica_directory_id)
    check_quorum.update_check_quorum_for_following_voter(ctx, key)
    respond(
        build_fetch_snapshot_response(
            ctx, Errors.NONE, wanted, size=size, position=p.position, chunk=chunk
        )
    )


def handle_fetch_snapshot_response(ctx: RaftContext, event: ResponseReceived) -> None:
    response = event.message
    assert isinstance(response, FetchSnapshotResponseData)
    if response.error_code != 0 or len(response.topics) != 1:
        response_failed(ctx, event.source)
        return
    partitions = response.topics[0].partitions
    if len(partitions) != 1:
        response_failed(ctx, event.source)
        return
    p = partitions[0]
    error = to_error(p.error_code)
    leader = p.current_leader
    if maybe_handle_common_response(ctx, error, leader.leader_id, leader.leader_epoch):
        return
    st = ctx.state
    if not isinstance(st, FollowerState) or event.source != st.leader_id:
        return
    if st.fetching_snapshot is None:
        return
    sid, received = st.fetching_snapshot
    if error != Errors.NONE:
        # The leader moved on (a newer snapshot) or we asked for nonsense: start over by Fetch.
        ctx.requests.back_off(event.source, ctx.now_ms)
        ctx.update_state(replace(st, fetching_snapshot=None))
        return
    if OffsetAndEpoch(p.snapshot_id.epoch, p.snapshot_id.end_offset) != sid:
        return
    if p.position != len(received):
        return  # a stale or duplicated chunk
    received += p.unaligned_records or b""
    deadline = ctx.now_ms + ctx.config.fetch_timeout_ms
    if len(received) < p.size:
        ctx.update_state(replace(st, fetching_snapshot=(sid, received), fetch_deadline_ms=deadline))
        return
    snapshot = Snapshot(sid, received)
    ctx.log.install_snapshot(snapshot)
    ctx.emit(InstallSnapshot(snapshot))
    hw = st.high_watermark
    ctx.update_state(
        replace(
            st,
            fetching_snapshot=None,
            fetch_deadline_ms=deadline,
            has_fetched=True,
            high_watermark=sid.offset if hw is None else max(hw, sid.offset),
        )
    )

"""Snapshots (KIP-630): a leader snapshot replaces its log prefix; a lagging follower fetches
it in chunks with FetchSnapshot, loads it and resumes Fetch at its end offset."""

from __future__ import annotations

from dataclasses import replace

from metaquorum.core.config import QuorumConfig
from metaquorum.core.effects import InstallSnapshot, WriteSnapshot
from metaquorum.core.events import CreateSnapshot, RequestReceived
from metaquorum.core.ids import OffsetAndEpoch
from metaquorum.core.log import LogEntry, RaftLog, Snapshot, ValidationKind
from metaquorum.core.states import ElectionState, FollowerState
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    FetchRequestData,
    FetchResponseData,
    FetchSnapshotRequestData,
    FetchSnapshotResponseData,
)

from tests.unit.core.context import RaftTestContext, entries, fetch_request, fetch_response

TOPIC = "__cluster_metadata"


def snapshot_request(end: int, epoch: int, position: int, leader_epoch: int, max_bytes: int = 4):
    p = FetchSnapshotRequestData.PartitionSnapshot(
        partition=0,
        current_leader_epoch=leader_epoch,
        snapshot_id=FetchSnapshotRequestData.SnapshotId(end_offset=end, epoch=epoch),
        position=position,
    )
    return FetchSnapshotRequestData(
        cluster_id="test-cluster-id-000000",
        replica_id=2,
        max_bytes=max_bytes,
        topics=[FetchSnapshotRequestData.TopicSnapshot(name=TOPIC, partitions=[p])],
    )


def snapshot_response(
    end: int, epoch: int, size: int, position: int, chunk: bytes, *, error: int = 0
):
    p = FetchSnapshotResponseData.PartitionSnapshot(
        index=0,
        error_code=error,
        snapshot_id=FetchSnapshotResponseData.SnapshotId(end_offset=end, epoch=epoch),
        current_leader=FetchSnapshotResponseData.LeaderIdAndEpoch(leader_id=1, leader_epoch=3),
        size=size,
        position=position,
        unaligned_records=chunk,
    )
    return FetchSnapshotResponseData(
        topics=[FetchSnapshotResponseData.TopicSnapshot(name=TOPIC, partitions=[p])]
    )


def test_log_snapshot_validation_and_epoch_lookup() -> None:
    log = RaftLog([LogEntry(i, e) for i, e in enumerate([1, 1, 2, 2, 3])])
    snap = log.create_snapshot(3, b"state")
    assert snap.snapshot_id == OffsetAndEpoch(2, 3)
    assert (log.start_offset, log.end_offset, log.epoch_starts) == (3, 5, ((2, 3), (3, 4)))
    assert log.validate_offset_and_epoch(0, 0).kind is ValidationKind.SNAPSHOT
    assert log.validate_offset_and_epoch(3, 1).kind is ValidationKind.SNAPSHOT  # wrong epoch
    assert log.validate_offset_and_epoch(3, 2).kind is ValidationKind.VALID
    assert log.validate_offset_and_epoch(5, 3).kind is ValidationKind.VALID
    empty = RaftLog()
    empty.install_snapshot(Snapshot(OffsetAndEpoch(2, 7), b"x"))
    assert (empty.end_offset, empty.last_fetched_epoch, empty.flushed_offset) == (7, 2, 7)
    assert empty.end_offset_for_epoch(5) == OffsetAndEpoch(2, 7)


def test_leader_snapshots_only_committed_data_and_answers_fetch_with_snapshot_id() -> None:
    ctx = RaftTestContext(1, [1, 2, 3], epochs=[1, 1, 1])
    ctx.become_leader()
    e = ctx.node.epoch
    ctx.handle(CreateSnapshot(3, b"abcdefghij"))
    assert not [x for x in ctx.effects if isinstance(x, WriteSnapshot)]  # HW unknown: refused
    ctx.request(2, fetch_request(2, e, 4, e))  # HW -> 4
    ctx.handle(CreateSnapshot(3, b"abcdefghij"))
    written = [x for x in ctx.effects if isinstance(x, WriteSnapshot)]
    assert [w.snapshot.snapshot_id for w in written] == [OffsetAndEpoch(1, 3)]
    assert ctx.node.log.start_offset == 3
    ctx.request(3, fetch_request(3, e, 0, 0))
    msg = ctx.response().message
    assert isinstance(msg, FetchResponseData)
    sid = msg.responses[0].partitions[0].snapshot_id
    assert (sid.end_offset, sid.epoch) == (3, 1)
    # FetchSnapshot: chunks by position; errors for a wrong id or position.
    ctx.request(3, snapshot_request(3, 1, 4, e, max_bytes=4))
    part = ctx.response().message.topics[0].partitions[0]
    assert (part.size, part.position, part.unaligned_records) == (10, 4, b"efgh")
    ctx.request(3, snapshot_request(3, 0, 0, e))
    assert ctx.response().message.topics[0].partitions[0].error_code == Errors.SNAPSHOT_NOT_FOUND
    ctx.request(3, snapshot_request(3, 1, 10, e))
    assert ctx.response().message.topics[0].partitions[0].error_code == Errors.POSITION_OUT_OF_RANGE
    ctx.request(3, snapshot_request(3, 1, 0, e - 1))
    assert ctx.response().message.topics[0].partitions[0].error_code == Errors.FENCED_LEADER_EPOCH


def test_follower_fetches_snapshot_in_chunks_loads_it_and_resumes() -> None:
    ctx = RaftTestContext(
        2,
        [1, 2, 3],
        election=ElectionState(3, 1, None),
        config=QuorumConfig(snapshot_chunk_bytes=4),
    )
    resp = fetch_response(1, 3, hw=5)
    part = replace(
        resp.responses[0].partitions[0],
        snapshot_id=FetchResponseData.SnapshotId(end_offset=5, epoch=2),
    )
    resp = replace(resp, responses=[replace(resp.responses[0], partitions=[part])])
    ctx.respond(1, resp)
    requests = ctx.sent(FetchSnapshotRequestData)
    assert len(requests) == 1
    p = requests[0].message.topics[0].partitions[0]
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch, p.position) == (5, 2, 0)
    ctx.respond(1, snapshot_response(5, 2, 6, 0, b"abcd"))
    assert ctx.sent(FetchSnapshotRequestData)[0].message.topics[0].partitions[0].position == 4
    ctx.respond(1, snapshot_response(5, 2, 6, 0, b"abcd"))  # a duplicate chunk: ignored
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.fetching_snapshot == (OffsetAndEpoch(2, 5), b"abcd")
    ctx.respond(1, snapshot_response(5, 2, 6, 4, b"ef"))
    installed = [x for x in ctx.effects if isinstance(x, InstallSnapshot)]
    assert installed and installed[0].snapshot.payload == b"abcdef"
    assert ctx.node.log.end_offset == 5 and ctx.node.high_watermark == 5
    fetch = ctx.sent(FetchRequestData)[0].message.topics[0].partitions[0]
    assert (fetch.fetch_offset, fetch.last_fetched_epoch) == (5, 2)
    ctx.respond(1, fetch_response(1, 3, hw=6), entries(5, [3]))
    assert ctx.node.log.end_offset == 6


def test_snapshot_not_found_restarts_with_fetch() -> None:
    ctx = RaftTestContext(2, [1, 2, 3], election=ElectionState(3, 1, None))
    st = ctx.node.state
    assert isinstance(st, FollowerState)
    ctx.node.state = replace(st, fetching_snapshot=(OffsetAndEpoch(2, 5), b""))
    ctx.handle(RequestReceived(9, 1, fetch_request(9, 3, 0, 0)))  # any event: poll
    ctx.respond(1, snapshot_response(5, 2, 0, 0, b"", error=int(Errors.SNAPSHOT_NOT_FOUND)))
    st = ctx.node.state
    assert isinstance(st, FollowerState) and st.fetching_snapshot is None

"""The core's voter set follows the log (issue 14, KIP-853), in the style of Kafka's
`KafkaRaftClientReconfigTest`: a bootstrapped quorum's first leader writes KRaftVersion +
Voters after its LeaderChange; a later leader does not, unless its own endpoints changed; a
follower's voter set changes when a VotersRecord is appended (not committed) and reverts when
it is truncated away; a replica with a voter's id but another directory id is an observer."""

from __future__ import annotations

from metaquorum.core.effects import VotersChanged
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import EntryKind, LogEntry, leader_change_message
from metaquorum.core.states import ElectionState, UnattachedState
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
from metaquorum.protocol.messages import KRaftVersionRecord, VotersRecord
from metaquorum.protocol.types import Uuid

from tests.unit.core.context import RaftTestContext, fetch_response


def _dir(i: int) -> str:
    return str(Uuid(7, i))


def _ep(i: int, port: int = 9090) -> ListenerEndpoint:
    return ListenerEndpoint("CONTROLLER", f"h{i}", port + i)


def _set(ids: list[int]) -> VoterSet:
    return VoterSet.from_nodes(VoterNode(ReplicaKey(i, _dir(i)), (_ep(i),), 0, 1) for i in ids)


def _ctx(local: int = 1, **kw: object) -> RaftTestContext:
    args: dict[str, object] = {
        "voter_set": _set([1, 2, 3]),
        "kraft_version": 1,
        "directory_id": _dir(local),
        "endpoints": (_ep(local),),
    }
    args.update(kw)
    return RaftTestContext(local, [1, 2, 3], **args)  # type: ignore[arg-type]


def _epoch_one_records() -> list[LogEntry]:
    """What the first leader (1) of epoch 1 wrote at offsets 0-2."""
    return [
        LogEntry.of_control(0, 1, leader_change_message(1, [1, 2, 3], [1, 2])),
        LogEntry.of_control(1, 1, KRaftVersionRecord(version=0, kraft_version=1)),
        LogEntry.of_control(2, 1, _set([1, 2, 3]).to_voters_record()),
    ]


def test_first_leader_of_a_bootstrapped_quorum_writes_kraft_version_and_voters() -> None:
    ctx = _ctx()
    assert ctx.node.control.latest_voters_offset() == -1  # from the bootstrap checkpoint
    ctx.become_leader()
    kinds = [e.kind for e in ctx.node.log.entries()]
    assert kinds == [EntryKind.LEADER_CHANGE, EntryKind.KRAFT_VERSION, EntryKind.KRAFT_VOTERS]
    entries = ctx.node.log.entries()
    assert len({e.epoch for e in entries}) == 1
    assert entries[2].control == _set([1, 2, 3]).to_voters_record()
    assert ctx.node.control.latest_voters_offset() == 2


def test_next_leader_writes_leader_change_only() -> None:
    ctx = _ctx(log_entries=_epoch_one_records(), election=ElectionState(1, -1, None))
    ctx.become_leader()
    new = [e for e in ctx.node.log.entries() if e.offset >= 3]
    assert [e.kind for e in new] == [EntryKind.LEADER_CHANGE]


def test_leader_whose_endpoint_moved_writes_its_updated_entry() -> None:
    moved = _ep(1, port=10_000)
    ctx = _ctx(
        log_entries=_epoch_one_records(),
        election=ElectionState(1, -1, None),
        endpoints=(moved,),
    )
    ctx.become_leader()
    new = [e for e in ctx.node.log.entries() if e.offset >= 3]
    assert [e.kind for e in new] == [
        EntryKind.LEADER_CHANGE,
        EntryKind.KRAFT_VERSION,
        EntryKind.KRAFT_VOTERS,
    ]
    node_one = ctx.node.voters.node(1)
    assert node_one is not None and node_one.endpoints == (moved,)
    changed = [e for e in ctx.effects if isinstance(e, VotersChanged)]
    assert not changed or changed[-1].voters == ctx.node.voters


def test_kraft_version_zero_leader_writes_leader_change_only() -> None:
    ctx = RaftTestContext(1, [1, 2, 3])
    ctx.become_leader()
    assert [e.kind for e in ctx.node.log.entries()] == [EntryKind.LEADER_CHANGE]


def test_follower_applies_voters_on_append_and_reverts_on_truncation() -> None:
    ctx = _ctx(election=ElectionState(3, 2, None))
    four = _set([1, 2, 3, 4])
    fetched = (
        LogEntry(0, 3, b"a"),
        LogEntry.of_control(1, 3, four.to_voters_record()),
    )
    ctx.respond(2, fetch_response(2, 3, hw=0), fetched)
    assert ctx.node.voters == four  # appended, not committed (HW 0): already in effect
    assert [e.voters for e in ctx.effects if isinstance(e, VotersChanged)] == [four]
    ctx.flush()
    ctx.respond(2, fetch_response(2, 3, diverging=(3, 1)))  # the change is truncated away
    assert ctx.node.log.end_offset == 1 and ctx.node.voters == _set([1, 2, 3])
    assert [e.voters for e in ctx.effects if isinstance(e, VotersChanged)] == [_set([1, 2, 3])]


def test_replica_with_a_voters_id_but_another_directory_is_an_observer() -> None:
    wiped = _ctx(directory_id=str(Uuid(99, 1)))  # id 1, a new disk
    assert not wiped.node.is_voter
    wiped.advance(10_000)
    assert isinstance(wiped.node.state, UnattachedState)  # never campaigns
    assert not any(isinstance(e, VotersRecord) for e in wiped.node.log.entries())
    assert _ctx().node.is_voter


def _fetch(replica: int, directory: str, epoch: int, offset: int, last_epoch: int) -> object:
    from dataclasses import replace

    from tests.unit.core.context import fetch_request

    request = fetch_request(replica, epoch, offset, last_epoch)
    topic = request.topics[0]
    part = replace(topic.partitions[0], replica_directory_id=Uuid.from_string(directory))
    return replace(request, topics=[replace(topic, partitions=[part])])


def test_requests_carry_directory_ids() -> None:
    from metaquorum.protocol.messages import FetchRequestData, VoteRequestData

    ctx = _ctx()
    ctx.advance_to_deadline()
    votes = ctx.sent(VoteRequestData)
    assert votes
    for sent in votes:
        p = sent.message.topics[0].partitions[0]
        assert str(p.replica_directory_id) == _dir(1)
        assert str(p.voter_directory_id) == _dir(sent.destination)
    follower = _ctx(election=ElectionState(3, 2, None))
    fetch = follower.sent(FetchRequestData)[0].message.topics[0].partitions[0]
    assert str(fetch.replica_directory_id) == _dir(1)


def test_vote_addressed_to_another_directory_of_this_id_is_invalid() -> None:
    from dataclasses import replace

    from metaquorum.protocol.errors import Errors

    from tests.unit.core.context import vote_request

    ctx = _ctx()
    request = vote_request(2, 5, 0, 0)
    request = replace(request, voter_id=1)
    topic = request.topics[0]
    part = replace(topic.partitions[0], voter_directory_id=Uuid(99, 99))
    ctx.request(2, replace(request, topics=[replace(topic, partitions=[part])]))
    answer = ctx.response().message.topics[0].partitions[0]
    assert answer.error_code == Errors.INVALID_VOTER_KEY and not answer.vote_granted


def test_a_wiped_voter_fetches_as_an_observer_and_counts_for_nothing() -> None:
    from metaquorum.protocol.messages import DescribeQuorumRequestData, DescribeQuorumResponseData

    ctx = _ctx()
    ctx.become_leader()
    epoch, end = ctx.node.epoch, ctx.node.log.end_offset
    cq = ctx.node.state.check_quorum_deadline_ms  # type: ignore[attr-defined]
    # Replica 2 lost its disk: same id, new directory id. Its fetch at the log end must not
    # commit anything (it is not a voter) nor keep the leader's check-quorum alive.
    ctx.now += 100
    ctx.request(2, _fetch(2, str(Uuid(99, 2)), epoch, end, epoch))
    assert ctx.node.high_watermark is None
    assert ctx.node.state.check_quorum_deadline_ms == cq  # type: ignore[attr-defined]
    ctx.request(3, _fetch(3, _dir(3), epoch, end, epoch))  # the real voter 3 commits it
    assert ctx.node.high_watermark == end
    dq = DescribeQuorumRequestData(
        topics=[
            DescribeQuorumRequestData.TopicData(
                topic_name="__cluster_metadata",
                partitions=[DescribeQuorumRequestData.PartitionData(partition_index=0)],
            )
        ]
    )
    ctx.request(9, dq)
    answer = ctx.response().message
    assert isinstance(answer, DescribeQuorumResponseData)
    part = answer.topics[0].partitions[0]
    assert [o.replica_id for o in part.observers] == [2]
    assert sorted(v.replica_id for v in part.current_voters) == [1, 2, 3]


def test_describe_quorum_below_v2_drops_nodes_and_directory_ids() -> None:
    from metaquorum.core.describe_quorum import for_version
    from metaquorum.protocol.messages import DescribeQuorumResponseData as D

    state = D.ReplicaState(replica_id=4, replica_directory_id=Uuid(1, 2))
    response = D(
        topics=[D.TopicData(topic_name="t", partitions=[D.PartitionData(observers=[state])])],
        nodes=[D.Node(node_id=1)],
    )
    for version in (0, 1):
        down = for_version(response, version)
        down.encode(version)  # Kafka's encoder refuses v2 fields below v2; so would ours
        assert down.nodes == [] and down.topics[0].partitions[0].observers[0].replica_id == 4
    assert for_version(response, 2) is response

"""The kraft.version 0 -> 1 upgrade (issue 14, KIP-853), in the style of Kafka's
`KafkaRaftClientReconfigTest`: voters of a static quorum report their directory ids to the new
leader with UpdateRaftVoter (kept in memory); the upgrade is refused until every voter has, then
appends KRaftVersion(1) + Voters in one batch, after which the voter set comes from the log."""

from __future__ import annotations

from metaquorum.core.effects import KRaftVersionUpgrade, SendRequest, SendResponse, VotersChanged
from metaquorum.core.events import UpgradeKRaftVersion
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import EntryKind
from metaquorum.core.states import ElectionState
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
from metaquorum.protocol.messages import (
    UpdateRaftVoterRequestData,
    UpdateRaftVoterResponseData,
)
from metaquorum.protocol.types import Uuid

from tests.unit.core.context import CLUSTER, RaftTestContext, fetch_request


def _ep(i: int) -> ListenerEndpoint:
    return ListenerEndpoint("CONTROLLER", f"h{i}", 9090 + i)


def _static(ids: list[int]) -> VoterSet:
    """A `controller.quorum.voters` set: endpoints, no directory ids, kraft.version 0 only."""
    return VoterSet.from_nodes(VoterNode(ReplicaKey(i), (_ep(i),), 0, 0) for i in ids)


def _leader() -> RaftTestContext:
    ctx = RaftTestContext(
        1,
        [1, 2, 3],
        voter_set=_static([1, 2, 3]),
        directory_id=str(Uuid(7, 1)),
        endpoints=(_ep(1),),
    )
    ctx.become_leader()
    ctx.now += 10
    ctx.flush()
    for v in (2, 3):
        end = ctx.node.log.end_offset
        ctx.request(v, fetch_request(v, ctx.node.epoch, end, ctx.node.epoch))
    assert ctx.node.high_watermark == ctx.node.log.end_offset
    return ctx


def _report(ctx: RaftTestContext, voter: int) -> int:
    request = UpdateRaftVoterRequestData(
        cluster_id=CLUSTER,
        current_leader_epoch=ctx.node.epoch,
        voter_id=voter,
        voter_directory_id=Uuid(7, voter),
        listeners=[
            UpdateRaftVoterRequestData.Listener(
                name="CONTROLLER", host=f"h{voter}", port=9090 + voter
            )
        ],
        kraft_version_feature=UpdateRaftVoterRequestData.KRaftVersionFeature(
            min_supported_version=0, max_supported_version=1
        ),
    )
    ctx.request(voter, request)
    answers = [e.message for e in ctx.effects if isinstance(e, SendResponse)]
    assert len(answers) == 1 and isinstance(answers[0], UpdateRaftVoterResponseData)
    return answers[0].error_code


def _upgrade(ctx: RaftTestContext, version: int = 1, **kw: object) -> str | None:
    ctx.handle(
        UpgradeKRaftVersion(kw.get("epoch", ctx.node.epoch), version, bool(kw.get("validate")))
    )  # type: ignore[arg-type]
    outcome = [e for e in ctx.effects if isinstance(e, KRaftVersionUpgrade)]
    assert len(outcome) == 1
    return outcome[0].error


def test_upgrade_waits_for_every_voter_then_writes_version_and_voters() -> None:
    ctx = _leader()
    assert ctx.node.control.latest_kraft_version() == 0
    assert _upgrade(ctx) == "not all of the voters support kraft.version 1 yet"
    assert _report(ctx, 2) == 0  # kept in memory only: nothing appended
    assert ctx.node.log.entries()[-1].kind is EntryKind.LEADER_CHANGE
    assert "support" in (_upgrade(ctx) or "")
    assert _report(ctx, 3) == 0
    assert _upgrade(ctx, validate=True) is None
    assert ctx.node.log.entries()[-1].kind is EntryKind.LEADER_CHANGE  # validate only
    assert _upgrade(ctx, epoch=ctx.node.epoch + 1) is not None
    assert _upgrade(ctx) is None
    kinds = [e.kind for e in ctx.node.log.entries()[-2:]]
    assert kinds == [EntryKind.KRAFT_VERSION, EntryKind.KRAFT_VOTERS]
    assert ctx.node.control.latest_kraft_version() == 1
    keys = ctx.node.voters.voter_keys()
    assert [k.directory_id for k in keys] == [str(Uuid(7, i)) for i in (1, 2, 3)]
    assert [e.voters for e in ctx.effects if isinstance(e, VotersChanged)] == [ctx.node.voters]
    assert _upgrade(ctx) is None  # the same version again: a no-op
    assert _upgrade(ctx, 0) == "an upgrade to 1 is pending"  # Kafka: concurrent upgrade


def test_kraft0_follower_reports_itself_once_to_each_new_leader() -> None:
    ctx = RaftTestContext(
        2,
        [1, 2, 3],
        voter_set=_static([1, 2, 3]),
        directory_id=str(Uuid(7, 2)),
        endpoints=(_ep(2),),
        election=ElectionState(3, 1, None),
    )
    sent = [e for e in ctx.effects if isinstance(e, SendRequest)]
    assert [type(e.message) for e in sent] == [UpdateRaftVoterRequestData]
    answer = UpdateRaftVoterResponseData(
        current_leader=UpdateRaftVoterResponseData.CurrentLeader(leader_id=1, leader_epoch=3)
    )
    ctx.respond(1, answer)
    ctx.advance(ctx.node.config.fetch_timeout_ms // 2)
    again = [e for e in ctx.effects if isinstance(e, SendRequest)]
    assert all(not isinstance(e.message, UpdateRaftVoterRequestData) for e in again)

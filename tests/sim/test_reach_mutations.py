"""The simulator reaches issue 33's situations and catches a bug planted in each (monkeypatched
from the test, never a product flag), each within 1,000 seeds of the mix aimed at it:

- vote persistence: a replica that restarts forgets the vote it persisted (`vote-restart`:
  the restarted replica grants a competing candidate of the same epoch, `single-vote`);
- check-quorum: the leader counts fetches from voters of its *committed* set, so a voter whose
  removal is appended but not committed still keeps it leading (`membership`, with the leader
  cut off from the remaining voters right after the removal: `leader-resigns-in-time`);
- UpdateRaftVoter: the leader acknowledges an update it never appends (`upgrade`: a moved voter's
  entry keeps its old endpoint, `voter-endpoints-liveness`); the kraft.version upgrade: a voter
  tells only the first leader it follows who it is, so a later leader can never upgrade
  (`upgrade`: `kraft-upgrade-liveness`);
- the snapshot policy (core/snapshot_membership.py, which the runtime's SnapshotPolicy runs):
  the newest voter set instead of the one as of the snapshot's last offset (`upgrade`, whose
  snapshots lag the HW so voter changes sit above them: `snapshot-consistent`).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from metaquorum.core import check_quorum, poll, update_voter
from metaquorum.core import node as node_module
from metaquorum.core import snapshot_membership as policy
from metaquorum.core.context import RaftContext
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
from metaquorum.core.states import ElectionState, EpochState, FollowerState, LeaderState
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import VotersRecord
from metaquorum.sim import state_machine

from tests.sim.test_mutations import first_caught

pytestmark = pytest.mark.simulation


def test_restart_forgets_the_persisted_vote(monkeypatch: pytest.MonkeyPatch) -> None:
    original = poll.initial_state  # what core/node.py calls at every (re)start

    def forget(ctx: RaftContext, election: ElectionState, now_ms: int) -> EpochState:
        voted = election.voted_key
        if voted is not None and voted.id != ctx.local.id and election.leader_id < 0:
            election = replace(election, voted_key=None)
        return original(ctx, election, now_ms)

    monkeypatch.setattr(node_module, "initial_state", forget)
    seed, kind = first_caught("vote-restart")
    assert kind in {"single-vote", "single-leader"}, (seed, kind)


def test_check_quorum_counts_a_voter_whose_removal_is_uncommitted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def committed_set(ctx: RaftContext, key: ReplicaKey) -> None:
        st = ctx.state
        hw = ctx.high_watermark
        committed = ctx.control.voters_at(-1 if hw is None else hw - 1)
        if not isinstance(st, LeaderState) or not committed.is_voter(key):
            return
        if key.id == ctx.local.id:
            return
        fetched = st.data.fetched_voters
        fetched.add(key.id)
        if len(fetched) >= len(ctx.voters) // 2 + 1 - (ctx.local.id in ctx.voters):
            fetched.clear()
            deadline = ctx.now_ms + ctx.config.check_quorum_timeout_ms
            ctx.update_state(replace(st, check_quorum_deadline_ms=deadline))

    monkeypatch.setattr(check_quorum, "update_check_quorum_for_following_voter", committed_set)
    seed, kind = first_caught("membership")
    assert kind == "leader-resigns-in-time", (seed, kind)


def test_update_voter_acknowledged_but_never_appended(monkeypatch: pytest.MonkeyPatch) -> None:
    original = update_voter.handle_update_raft_voter_request

    def lose_update(ctx: RaftContext, event: object) -> None:
        if ctx.control.latest_kraft_version() < 1:
            original(ctx, event)  # type: ignore[arg-type]
            return
        answer = update_voter.update_voter_response(ctx, Errors.NONE)
        from metaquorum.core.effects import SendResponse
        from metaquorum.core.events import RequestReceived

        assert isinstance(event, RequestReceived)
        ctx.emit(SendResponse(event.source, event.correlation_id, answer))

    from metaquorum.core import dispatch
    from metaquorum.protocol.messages import UpdateRaftVoterRequestData

    monkeypatch.setitem(dispatch.REQUEST_HANDLERS, UpdateRaftVoterRequestData, lose_update)
    seed, kind = first_caught("upgrade")
    assert kind == "voter-endpoints-liveness", (seed, kind)


def test_voter_tells_only_its_first_leader_who_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    original = update_voter.should_send
    told: set[tuple[int, int]] = set()  # (replica, incarnation's first correlation id block)

    def once(ctx: RaftContext, st: FollowerState, now_ms: int) -> bool:
        me = (ctx.local.id, id(ctx))
        if ctx.control.latest_kraft_version() < 1 and me in told:
            return False
        send = original(ctx, st, now_ms)
        if send:
            told.add(me)
        return send

    monkeypatch.setattr(update_voter, "should_send", once)
    seed, kind = first_caught("upgrade")
    assert kind == "kraft-upgrade-liveness", (seed, kind)


def test_snapshot_carries_the_newest_voter_set(monkeypatch: pytest.MonkeyPatch) -> None:
    def newest(
        control: KRaftControlRecordStateMachine, end: int
    ) -> tuple[int, VotersRecord | None]:
        kraft = control.kraft_version_at(end - 1)
        voters = control.latest_voters()
        return kraft, voters.to_voters_record() if kraft >= 1 and voters.nodes else None

    monkeypatch.setattr(policy, "snapshot_membership", newest)
    monkeypatch.setattr(state_machine, "snapshot_membership", newest)
    seed, kind = first_caught("upgrade")
    assert kind == "snapshot-consistent", (seed, kind)

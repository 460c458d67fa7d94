"""The simulator catches KIP-853 bugs (issue 14): each one is planted by monkeypatching the
core (never a product flag) and must break an invariant within 1,000 seeds of a membership mix.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from metaquorum.core import voter_change
from metaquorum.core.high_watermark import LeaderProgress
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
from metaquorum.core.log import EntryKind, LogEntry
from metaquorum.core.node import RaftNode
from metaquorum.core.states import LeaderState
from metaquorum.core.voter_set import VoterSet
from metaquorum.protocol.errors import Errors

from tests.sim.test_mutations import MAX_SEEDS, first_caught

pytestmark = pytest.mark.simulation


def _blocked_without(*, own_epoch: bool = True, fence: bool = True):  # type: ignore[no-untyped-def]
    """`change_blocked` with one of its checks left out."""

    def blocked(node: RaftNode, doing: str) -> tuple[Errors, str] | None:
        st = node.state
        assert isinstance(st, LeaderState)
        voter_change.expire_pending_change(node)
        if st.data.pending_change is not None:
            return Errors.REQUEST_TIMED_OUT, "pending"
        hw = node.high_watermark
        if own_epoch and hw is None:
            return Errors.REQUEST_TIMED_OUT, "no HW"
        if fence and hw is not None and node.control.latest_voters_offset() >= hw:
            return Errors.REQUEST_TIMED_OUT, "uncommitted"
        return None

    return blocked


def test_change_before_the_own_epoch_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(voter_change, "change_blocked", _blocked_without(own_epoch=False))
    import metaquorum.core.add_voter as add
    import metaquorum.core.remove_voter as remove

    monkeypatch.setattr(add, "change_blocked", voter_change.change_blocked)
    monkeypatch.setattr(remove, "change_blocked", voter_change.change_blocked)
    seed, kind = first_caught("membership")
    assert kind in {"voter-change-own-epoch", "one-uncommitted-voter-set"}, (seed, kind)


def test_pending_change_cleared_on_timeout_without_the_commit_fence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kafka's bug: the expired change's state goes and nothing else stops a second change
    while the first VotersRecord is uncommitted."""
    import metaquorum.core.add_voter as add
    import metaquorum.core.remove_voter as remove

    mutated = _blocked_without(fence=False)
    monkeypatch.setattr(add, "change_blocked", mutated)
    monkeypatch.setattr(remove, "change_blocked", mutated)
    seed, kind = first_caught("membership")
    assert kind in {"one-uncommitted-voter-set", "voter-change-single"}, (seed, kind)


def test_removed_voter_still_counted_toward_the_hw(monkeypatch: pytest.MonkeyPatch) -> None:
    original = LeaderProgress.set_voters

    def keep_removed(self: LeaderProgress, keys: Sequence[ReplicaKey]) -> None:
        kept = [k for k in keys]
        ids = {k.id for k in kept}
        kept += [ReplicaKey(v, s.directory_id) for v, s in self.voters.items() if v not in ids]
        original(self, kept)

    monkeypatch.setattr(LeaderProgress, "set_voters", keep_removed)
    seed, kind = first_caught("membership")
    assert kind in {"hw-majority-flushed", "committed-stable"}, (seed, kind)


def test_voter_set_applied_on_commit_instead_of_on_append(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original_append = KRaftControlRecordStateMachine.on_append
    pending: dict[int, list[LogEntry]] = {}

    def append_without_voters(
        self: KRaftControlRecordStateMachine, entries: Sequence[LogEntry]
    ) -> None:
        later = [e for e in entries if e.kind is EntryKind.KRAFT_VOTERS]
        pending.setdefault(id(self), []).extend(later)
        original_append(self, [e for e in entries if e.kind is not EntryKind.KRAFT_VOTERS])

    original_report = RaftNode._report_progress

    def apply_on_commit(self: RaftNode) -> None:
        hw = self.high_watermark
        queue = pending.get(id(self.control), [])
        while hw is not None and queue and queue[0].offset < hw:
            e = queue.pop(0)
            if e.offset > self.control.latest_voters_offset() and e.offset < self.log.end_offset:
                assert e.control is not None
                self.control.voter_history.add_at(e.offset, VoterSet.from_voters_record(e.control))  # type: ignore[arg-type]
        original_report(self)

    monkeypatch.setattr(KRaftControlRecordStateMachine, "on_append", append_without_voters)
    monkeypatch.setattr(RaftNode, "_report_progress", apply_on_commit)
    seed, kind = first_caught("membership")
    assert kind in {"voter-change-single", "voter-set-agreement", "hw-majority-flushed"}, (
        seed,
        kind,
    )


def test_wiped_replica_votes_under_its_old_directory_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replica that lost its disk answers a VoteRequest addressed to its old directory id
    (no INVALID_VOTER_KEY): with an empty log it grants any candidate."""
    import metaquorum.core.rpc_common as rpc

    monkeypatch.setattr(rpc, "is_valid_voter_key", lambda node, voter_id, directory: True)
    import metaquorum.core.begin_quorum_epoch as bqe
    import metaquorum.core.vote as vote

    monkeypatch.setattr(vote, "is_valid_voter_key", rpc.is_valid_voter_key)
    monkeypatch.setattr(bqe, "is_valid_voter_key", rpc.is_valid_voter_key)
    from metaquorum.sim.api import run_scenario

    for seed in range(MAX_SEEDS):
        result, _ = run_scenario("five-membership", seed)
        if result.violations:
            v = result.violations[0]
            print(f"caught at seed {seed}: {v['kind']}: {v['detail']}")
            # A leader without the committed prefix: its followers are told to drop committed
            # entries (the core refuses: TruncationBelowHighWatermark) or the data differs.
            assert v["kind"] in {"committed-stable", "log-matching", "hw-majority-flushed"} or (
                "TruncationBelowHighWatermark" in str(v["detail"])
            ), v
            return
    raise AssertionError(f"mutation survived {MAX_SEEDS} seeds of five-membership")

"""Leaf structures of the core against naive oracles (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.core.batch_accumulator import BatchAccumulator, PendingAppend
from metaquorum.core.config import QuorumConfig
from metaquorum.core.fetch_purgatory import FetchPurgatory, ParkedFetch
from metaquorum.core.high_watermark import LeaderProgress, compute_high_watermark
from metaquorum.core.request_manager import RequestManager
from metaquorum.core.vote_tally import VoteTally
from metaquorum.core.voter_set import VoterSet, VoterSetHistory

offsets = st.one_of(st.none(), st.integers(min_value=0, max_value=50))


def naive_hw(values: list[int | None], start: int, current: int | None) -> int | None:
    n = len(values)
    acked = [-1 if v is None else v for v in values]
    best = None
    for cand in range(0, 60):
        if sum(1 for a in acked if a >= cand) > n // 2:
            best = cand
    if best is None or best <= start:
        return current
    return best if current is None or best > current else current


@given(st.lists(offsets, min_size=1, max_size=7), st.integers(0, 40), offsets)
def test_high_watermark_matches_majority_oracle(values, start, current):
    got = compute_high_watermark(dict(enumerate(values)), start, current)
    assert got == naive_hw(values, start, current)


def test_high_watermark_waits_for_own_epoch_record():
    # Epoch starts at 10 (the LeaderChange record is at offset 10); everyone has 10: not yet.
    assert compute_high_watermark({1: 10, 2: 10, 3: 10}, 10, None) is None
    assert compute_high_watermark({1: 11, 2: 11, 3: 0}, 10, None) == 11


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 30)), max_size=30))
def test_leader_progress_hw_is_monotonic_and_majority_backed(updates):
    p = LeaderProgress(1, [1, 2, 3], epoch_start_offset=5)
    last = None
    acked: dict[int, int] = {}
    for rid, off in updates:
        if rid == 1:
            p.update_local(off, 0)
        else:
            p.update_replica(rid, off, 30, 0)
        acked[rid] = off
        hw = p.high_watermark
        if last is not None:
            assert hw is not None and hw >= last
        if hw is not None and hw != last:
            assert hw > 5
            assert sum(1 for v in acked.values() if v >= hw) >= 2
        last = hw


@given(
    st.sets(st.integers(0, 6), min_size=1), st.lists(st.tuples(st.integers(0, 8), st.booleans()))
)
def test_vote_tally_against_oracle(voters, answers):
    voters = frozenset(voters)
    local = min(voters)
    t = VoteTally.start(voters, local)
    granted, rejected = {local}, set()
    for v, g in answers:
        t = t.record(v, g)
        if v in voters and v not in granted and v not in rejected:
            (granted if g else rejected).add(v)
    maj = len(voters) // 2 + 1
    assert t.granted == granted and t.rejected == rejected
    assert t.is_granted == (len(granted) >= maj)
    assert t.is_rejected == (len(voters) - len(rejected) < maj)
    assert not (t.is_granted and t.is_rejected)


@given(
    st.sets(st.integers(0, 4), min_size=1),
    st.lists(st.tuples(st.sampled_from(["yes", "no", "campaign"]), st.integers(0, 5))),
)
def test_vote_tally_asks_a_campaigning_voter_again_at_most_once(voters, events):
    """Split-vote avoidance (vote_tally.py): whatever the order of a voter's answers and its own
    campaign, one rejection of a campaigning voter is not counted (it is asked again), never two;
    a voter that never campaigns is counted as by `record` alone; a grant is never lost."""
    voters = frozenset(voters)
    local = min(voters)
    t = VoteTally.start(voters, local)
    plain = VoteTally.start(voters, local)
    uncounted = {v: 0 for v in voters}
    for kind, v in events:
        before = t
        if kind == "campaign":
            t = t.campaign_seen(v)
            if v in before.rejected and v not in t.rejected:
                uncounted[v] += 1
        else:
            t = t.record(v, kind == "yes")
            if v not in voters or v in before.granted or v in before.rejected:
                assert t == before  # a voter's first answer only, as `record` always did
            elif kind == "no" and v not in t.rejected:
                uncounted[v] += 1
            if v not in t.campaigning:
                plain = plain.record(v, kind == "yes")
        assert before.granted <= t.granted and not (t.granted & t.rejected)
        assert all(n <= 1 for n in uncounted.values())
        assert uncounted == {v: int(v in t.asked_again) for v in voters}
        quiet = voters - t.campaigning
        assert t.granted & quiet == plain.granted & quiet
        assert t.rejected & quiet == plain.rejected & quiet


def test_request_manager_backoff_timeout_and_stale_responses():
    rm = RequestManager(request_timeout_ms=100, retry_backoff_ms=20)
    assert rm.is_ready(2, 0)
    rm.on_request_sent(2, 7, 0)
    assert not rm.is_ready(2, 50)
    assert not rm.on_response(2, 6, True, 60)  # stale id
    assert rm.on_response(2, 7, False, 60)
    assert not rm.is_ready(2, 79) and rm.is_ready(2, 80)
    rm.on_request_sent(2, 8, 100)
    assert rm.next_deadline_ms(2) == 200
    assert not rm.is_ready(2, 200)  # times out, now backing off
    assert not rm.has_inflight(2, 200)
    assert rm.is_ready(2, 220)
    assert not rm.on_response(2, 8, True, 230)  # late response after the timeout


def test_request_manager_reports_every_request_it_gives_up_on():
    """Abandoned in flight (timeout, reset, a newer request there): reported once each, so the
    driver closes its connection; answered or failed requests are not abandoned."""
    gone: list[tuple[int, int]] = []
    rm = RequestManager(100, 20, on_abandon=lambda d, c: gone.append((d, c)))
    rm.on_request_sent(2, 7, 0)
    assert rm.on_response(2, 7, True, 10)
    rm.on_request_sent(3, 8, 10)
    assert rm.on_response(3, 8, False, 20)
    assert gone == []
    rm.on_request_sent(2, 9, 20)
    assert not rm.is_ready(2, 120)  # timed out
    assert gone == [(2, 9)]
    assert not rm.is_ready(2, 130) and not rm.has_inflight(2, 130)
    assert gone == [(2, 9)]  # once
    rm.on_request_sent(3, 10, 200)
    rm.on_request_sent(3, 11, 201)  # replaces 10 in flight
    rm.on_request_sent(2, 12, 202)
    rm.reset(3)
    assert gone == [(2, 9), (3, 10), (3, 11)]
    rm.reset()
    rm.reset()
    assert gone == [(2, 9), (3, 10), (3, 11), (2, 12)]


def test_fetch_purgatory_completion_rules():
    p: FetchPurgatory[str] = FetchPurgatory()
    p.park(
        ParkedFetch(2, 1, fetch_offset=10, follower_high_watermark=5, expire_ms=500, request="a")
    )
    p.park(
        ParkedFetch(3, 1, fetch_offset=10, follower_high_watermark=8, expire_ms=900, request="b")
    )
    assert p.complete(end_offset=10, high_watermark=5, now_ms=100) == []
    done = p.complete(end_offset=10, high_watermark=6, now_ms=100)  # KIP-1166: 5 < 6
    assert [f.request for f in done] == ["a"]
    assert [f.request for f in p.complete(11, 6, 100)] == ["b"]  # new data
    p.park(ParkedFetch(2, 2, 10, 6, 500, "c"))
    old = p.park(ParkedFetch(2, 3, 10, 6, 600, "d"))
    assert old is not None and old.request == "c"
    assert p.next_expiry_ms() == 600
    assert [f.request for f in p.complete(10, 6, 600)] == ["d"]
    assert len(p) == 0


@settings(max_examples=50)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30)), max_size=30))
def test_batch_accumulator_order_linger_and_size(appends):
    acc = BatchAccumulator(linger_ms=25, max_batch_bytes=64)
    now = 0
    seen: list[int] = []
    for i, (dt, size) in enumerate(appends):
        now += dt
        dl = acc.drain_deadline_ms()
        if dl is not None and now >= dl:
            for batch in acc.drain(now):
                assert sum(x.size for x in batch) <= 64 or len(batch) == 1
                seen.extend(x.append_id for x in batch)
        assert acc.drain(now - 1 if acc.drain_deadline_ms() is None else now) == [] or True
        acc.append(PendingAppend(i, (b"x" * size,)), now)
        if acc.drain_deadline_ms() is not None:
            assert not acc.ready(acc.drain_deadline_ms() - 1)  # type: ignore[operator]
    for batch in acc.drain(now, force=True):
        seen.extend(x.append_id for x in batch)
    assert seen == list(range(len(appends)))


def test_batch_accumulator_does_not_drain_early():
    acc = BatchAccumulator(linger_ms=25, max_batch_bytes=100)
    acc.append(PendingAppend(1, (b"ab",)), 10)
    assert acc.drain(34) == []
    assert [[x.append_id for x in b] for b in acc.drain(35)] == [[1]]
    acc.append(PendingAppend(2, (b"x" * 100,)), 40)
    assert acc.drain_deadline_ms() == 40  # full: drain now


def test_voter_set_and_history():
    vs = VoterSet.of([3, 1, 2])
    assert vs.sorted_ids() == [1, 2, 3] and vs.majority == 2
    h = VoterSetHistory(vs)
    h.add_at(10, VoterSet.of([1, 2, 3, 4]))
    assert h.at(9) == vs and len(h.at(10)) == 4 and len(h.latest()) == 4
    with pytest.raises(ValueError):
        h.add_at(10, vs)
    h.truncate_from(10)
    assert h.latest() == vs


def test_config_kafka_names_and_defaults():
    c = QuorumConfig()
    assert (c.election_timeout_ms, c.fetch_timeout_ms, c.election_backoff_max_ms) == (
        1000,
        2000,
        1000,
    )
    assert (c.append_linger_ms, c.request_timeout_ms, c.retry_backoff_ms) == (25, 2000, 20)
    assert c.check_quorum_timeout_ms == 3000 and c.begin_quorum_epoch_timeout_ms == 1000
    c2 = QuorumConfig.from_properties({"controller.quorum.fetch.timeout.ms": "500"})
    assert c2.fetch_timeout_ms == 500
    with pytest.raises(ValueError, match=r"controller\.quorum\.election\.timeout\.ms"):
        QuorumConfig.from_properties({"controller.quorum.election.timeout.ms": "soon"})
    with pytest.raises(ValueError, match=r"controller\.quorum\.retry\.backoff\.ms"):
        QuorumConfig(retry_backoff_ms=-1)

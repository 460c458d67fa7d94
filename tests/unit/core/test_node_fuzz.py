"""Random event sequences against one replica: the core never breaks its own rules.

Whatever arrives (stale, duplicated, reordered or nonsensical messages from peers, flushes,
appends, time jumps), `RaftNode` must not raise (except Kafka's deliberate refusal to truncate
below the high watermark), its epoch and HW never go back, and it never reports two leaders
for one epoch.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.core.effects import LeaderChanged
from metaquorum.core.errors import TruncationBelowHighWatermark
from metaquorum.core.events import ClientAppend, Flushed, Poll, RequestReceived, ResponseReceived

from tests.unit.core.context import (
    RaftTestContext,
    begin_epoch,
    end_epoch,
    entries,
    fetch_request,
    fetch_response,
    vote_request,
    vote_response,
)

peers = st.integers(2, 4)
epochs = st.integers(0, 6)
offsets = st.integers(0, 8)


@st.composite
def an_event(draw: st.DrawFn) -> tuple[str, object]:
    kind = draw(
        st.sampled_from(
            ["poll", "vote", "vote-rs", "fetch", "fetch-rs", "bqe", "eqe", "flush", "append"]
        )
    )
    src = draw(peers)
    e = draw(epochs)
    if kind == "poll":
        return kind, draw(st.integers(0, 3000))
    if kind == "vote":
        last = draw(st.integers(0, max(0, e)))
        return kind, RequestReceived(
            src, 1, vote_request(e, src, last, draw(offsets), pre_vote=draw(st.booleans()))
        )
    if kind == "vote-rs":
        return kind, (src, vote_response(e, draw(st.booleans()), draw(st.integers(-1, 4))))
    if kind == "fetch":
        last = draw(st.integers(0, max(0, e)))
        return kind, RequestReceived(
            src, 2, fetch_request(src, e, draw(offsets), last, hw=draw(st.integers(-1, 8)))
        )
    if kind == "fetch-rs":
        leader = draw(st.integers(-1, 4))
        n = draw(st.integers(0, 3))
        start = draw(offsets)
        div = draw(st.one_of(st.none(), st.tuples(st.integers(0, 6), offsets)))
        msg = fetch_response(leader, e, hw=draw(st.integers(-1, 10)), diverging=div)
        return kind, (src, msg, entries(start, [e] * n))
    if kind == "bqe":
        return kind, RequestReceived(src, 3, begin_epoch(src, e))
    if kind == "eqe":
        return kind, RequestReceived(src, 4, end_epoch(src, e, [1, 2, 3]))
    if kind == "flush":
        return kind, Flushed(draw(st.integers(0, 12)))
    return kind, ClientAppend(draw(st.integers(0, 100)), (b"v",))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.lists(an_event(), max_size=40))
def test_random_events_never_break_the_core(local: int, events: list[tuple[str, object]]) -> None:
    ctx = RaftTestContext(local, [1, 2, 3], seed=local)
    leaders: dict[int, int] = {}
    last_epoch = ctx.node.epoch
    last_hw = -1
    for kind, data in events:
        try:
            if kind == "poll":
                assert isinstance(data, int)
                ctx.advance(data)
            elif kind == "vote-rs":
                src, msg = data  # type: ignore[misc]
                ctx.respond(src, msg)
            elif kind == "fetch-rs":
                src, msg, recs = data  # type: ignore[misc]
                cid = [r.correlation_id for r in ctx._history if r.destination == src]
                ctx.handle(ResponseReceived(src, cid[-1] if cid else 0, msg, recs))
            else:
                ctx.handle(data)  # type: ignore[arg-type]
        except TruncationBelowHighWatermark:
            return  # Kafka stops the replica here too (a leader asked to drop committed data)
        for eff in ctx.effects:
            if isinstance(eff, LeaderChanged) and eff.leader_id >= 0:
                assert leaders.setdefault(eff.epoch, eff.leader_id) == eff.leader_id
        assert ctx.node.epoch >= last_epoch
        last_epoch = ctx.node.epoch
        hw = ctx.node.high_watermark
        if hw is not None:
            assert hw >= last_hw
            last_hw = hw
        ctx.handle(Poll())

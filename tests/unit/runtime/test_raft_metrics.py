"""Kafka's windowing for the raft-metrics sensors (runtime/raft_metrics.py): 2 samples of 30 s
as Kafka's default MetricConfig; NaN with nothing in the window; a rate over at least one full
window; election latency from Prospective/Candidate to Leader/Follower."""

from __future__ import annotations

import math

from metaquorum.core.states import CandidateState, FollowerState, ProspectiveState, UnattachedState
from metaquorum.core.vote_tally import VoteTally
from metaquorum.runtime.raft_metrics import RaftMetrics, SampledStat


def test_avg_and_max_cover_the_last_two_windows_then_expire() -> None:
    s = SampledStat()
    assert math.isnan(s.avg(0)) and math.isnan(s.max(0))
    s.record(10, 0)
    s.record(30, 1_000)
    s.record(50, 31_000)  # a second sample
    assert s.avg(31_000) == 30 and s.max(31_000) == 50
    s.record(2, 61_000)  # a third sample: the first falls out
    assert s.avg(61_000) == 26 and s.max(61_000) == 50
    assert math.isnan(s.avg(200_000))  # both samples older than two windows


def test_rate_divides_by_at_least_one_full_window() -> None:
    s = SampledStat()
    s.record(300, 1_000)  # a burst one second after start
    assert s.rate_per_s(1_000, started_ms=0) == 300 / 30
    s.record(300, 45_000)
    assert s.rate_per_s(45_000, started_ms=0) == 600 / 44


def test_election_latency_from_prospective_to_follower() -> None:
    m = RaftMetrics(started_ms=0)
    m.on_state(UnattachedState(1, 500), 0)
    assert math.isnan(m.election_latency.max(100))
    m.on_state(ProspectiveState(1, 900, VoteTally.start(frozenset({1, 2, 3}), 1)), 100)
    m.on_state(CandidateState(2, 900, VoteTally.start(frozenset({1, 2, 3}), 1)), 150)
    m.on_state(FollowerState(2, 3, 2_000), 340)
    assert m.election_latency.max(340) == 240 and m.election_started_ms is None


def test_idle_ratio_and_record_rates() -> None:
    m = RaftMetrics(started_ms=0)
    m.on_idle(750, 250)  # waited from 250 to 1000
    assert m.idle_ratio(1_250) == 0.75
    m.on_appended(5, as_leader=True, now_ms=1_000)
    m.on_appended(7, as_leader=False, now_ms=1_000)
    assert m.append_records.total(1_000) == 5 and m.fetch_records.total(1_000) == 7

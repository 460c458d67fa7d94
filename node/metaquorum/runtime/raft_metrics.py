"""Kafka's `raft-metrics` sensors with Kafka's windowing (`KafkaRaftMetrics`, Kafka 4.3).

Role: the windowed statistics behind /metrics: commit-latency-avg/max, election-latency-avg/max,
fetch-records-rate, append-records-rate and poll-idle-ratio-avg, each as Kafka's
`org.apache.kafka.common.metrics` computes them with its default `MetricConfig` (2 samples of
30 s: a value covers the last 30-60 s, not the node's whole life), plus the leader-only gauges
(number-of-observers, uncommitted-voter-change) and number-unknown-voter-connections, read from
the core at scrape time.
Meanings as in Kafka: an election lasts from becoming Prospective or Candidate until this
replica is Leader or Follower of some leader; fetch-records-rate counts records appended as a
follower (or observer), append-records-rate records appended as the leader; the idle ratio is
the share of time the driver waited for an event; uncommitted-voter-change is 1 while the leader
has an Add/RemoveRaftVoter in flight (Kafka's `LeaderState`).
Invariants: no stat reads a clock (the driver passes `now_ms`); a stat with no sample in its
window reads NaN for avg/max, as Kafka's; rates divide by at least one full window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from metaquorum.core.states import (
    CandidateState,
    EpochState,
    FollowerState,
    LeaderState,
    ProspectiveState,
)

SAMPLES = 2  # Kafka's MetricConfig defaults
WINDOW_MS = 30_000


@dataclass
class _Sample:
    start_ms: int
    count: int = 0
    total: float = 0.0
    max: float = -math.inf


@dataclass
class SampledStat:
    """Kafka's `SampledStat`: `SAMPLES` rolling windows of `WINDOW_MS`."""

    samples: list[_Sample] = field(default_factory=list)

    def record(self, value: float, now_ms: int) -> None:
        if not self.samples or now_ms >= self.samples[-1].start_ms + WINDOW_MS:
            self.samples.append(_Sample(now_ms))
            del self.samples[:-SAMPLES]
        s = self.samples[-1]
        s.count += 1
        s.total += value
        s.max = max(s.max, value)

    def _live(self, now_ms: int) -> list[_Sample]:
        return [s for s in self.samples if now_ms - s.start_ms < SAMPLES * WINDOW_MS]

    def avg(self, now_ms: int) -> float:
        live = self._live(now_ms)
        n = sum(s.count for s in live)
        return sum(s.total for s in live) / n if n else math.nan

    def max(self, now_ms: int) -> float:
        live = [s for s in self._live(now_ms) if s.count]
        return max(s.max for s in live) if live else math.nan

    def total(self, now_ms: int) -> float:
        return sum(s.total for s in self._live(now_ms))

    def rate_per_s(self, now_ms: int, started_ms: int) -> float:
        """Kafka's `Rate` (`windowSize`): the sum over the elapsed window, counting at least
        `SAMPLES - 1` full windows (a fresh node does not report a burst as a huge rate)."""
        live = self._live(now_ms)
        oldest = min((s.start_ms for s in live), default=now_ms)
        elapsed = now_ms - max(oldest, started_ms) if live else 0
        full = elapsed // WINDOW_MS
        if full < SAMPLES - 1:
            elapsed += (SAMPLES - 1 - full) * WINDOW_MS
        return self.total(now_ms) / (elapsed / 1000) if elapsed > 0 else 0.0


@dataclass
class RaftMetrics:
    started_ms: int
    commit_latency: SampledStat = field(default_factory=SampledStat)
    election_latency: SampledStat = field(default_factory=SampledStat)
    fetch_records: SampledStat = field(default_factory=SampledStat)
    append_records: SampledStat = field(default_factory=SampledStat)
    idle: SampledStat = field(default_factory=SampledStat)
    election_started_ms: int | None = None

    def on_state(self, state: EpochState, now_ms: int) -> None:
        """Kafka's `updateElectionStartMs` (becoming Prospective or Candidate) and
        `maybeUpdateElectionLatency` (becoming Leader or Follower)."""
        if isinstance(state, ProspectiveState | CandidateState):
            if self.election_started_ms is None:
                self.election_started_ms = now_ms
        elif (
            isinstance(state, LeaderState | FollowerState) and self.election_started_ms is not None
        ):
            self.election_latency.record(now_ms - self.election_started_ms, now_ms)
            self.election_started_ms = None

    def on_appended(self, records: int, as_leader: bool, now_ms: int) -> None:
        (self.append_records if as_leader else self.fetch_records).record(records, now_ms)

    def on_idle(self, idle_ms: float, began_ms: int) -> None:
        """A wait of `idle_ms` that began at `began_ms` (so the window covers it)."""
        self.idle.record(idle_ms, began_ms)

    def idle_ratio(self, now_ms: int) -> float:
        """poll-idle-ratio-avg: waiting time over the time the window covers."""
        live = self.idle._live(now_ms)
        if not live:
            return math.nan
        covered = now_ms - max(live[0].start_ms, self.started_ms)
        return min(1.0, self.idle.total(now_ms) / covered) if covered > 0 else math.nan

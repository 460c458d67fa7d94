"""Quorum configuration with Kafka's names and defaults (QuorumConfig, KIP-595 §Configs).

Invariant: every timer in the core derives from these numbers; the core never reads a clock,
it only compares absolute deadlines in milliseconds with the `now_ms` it is handed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

from metaquorum.core.value import value

# Kafka constants (KafkaRaftClient): a follower's Fetch long-poll and size limits.
MAX_FETCH_WAIT_MS = 500
MAX_FETCH_SIZE_BYTES = 8 * 1024 * 1024
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
RETRY_BACKOFF_BASE_MS = 50
CHECK_QUORUM_TIMEOUT_FACTOR = 1.5

_KAFKA_NAMES: dict[str, str] = {
    "election_timeout_ms": "controller.quorum.election.timeout.ms",
    "fetch_timeout_ms": "controller.quorum.fetch.timeout.ms",
    "election_backoff_max_ms": "controller.quorum.election.backoff.max.ms",
    "append_linger_ms": "controller.quorum.append.linger.ms",
    "request_timeout_ms": "controller.quorum.request.timeout.ms",
    "retry_backoff_ms": "controller.quorum.retry.backoff.ms",
}
# metaquorum's own switch (not a Kafka config): drain the accumulator at once when the log is
# idle (everything appended is flushed), so linger costs latency only under load.
ADAPTIVE_LINGER = "metaquorum.append.linger.adaptive"
AUTO_JOIN = "controller.quorum.auto.join.enable"  # Kafka 4.2+, default false (auto_join.py)


@value
class QuorumConfig:
    """The timing configs of `controller.quorum.*`, defaults as in Kafka 4.3."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    append_linger_ms: int = 25
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = MAX_FETCH_WAIT_MS
    max_batch_size_bytes: int = MAX_BATCH_SIZE_BYTES
    snapshot_chunk_bytes: int = MAX_FETCH_SIZE_BYTES
    # Adaptive linger: `append_linger_ms` is the upper bound; an append that finds the leader's
    # log idle (nothing unflushed) is drained at once. 0 = Kafka's plain linger.
    append_linger_adaptive: int = 1
    # KIP-853 auto-join: an observer adds itself to the voters (1) or waits to be added (0).
    auto_join_enable: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or value < 0:
                name = _KAFKA_NAMES.get(f.name, f.name)
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")

    @property
    def check_quorum_timeout_ms(self) -> int:
        """A leader resigns when a majority has not fetched for this long (LeaderState)."""
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    @property
    def begin_quorum_epoch_timeout_ms(self) -> int:
        """BeginQuorumEpoch is re-sent to voters that have not fetched for this long."""
        return self.fetch_timeout_ms // 2

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> QuorumConfig:
        """Build from Kafka-named properties; unknown keys are ignored, bad values raise."""
        kwargs: dict[str, int] = {}
        for attr, name in _KAFKA_NAMES.items():
            if name in props:
                try:
                    kwargs[attr] = int(props[name])
                except ValueError:
                    raise ValueError(f"{name} must be an integer, got {props[name]!r}") from None
        for name, attr in (
            (ADAPTIVE_LINGER, "append_linger_adaptive"),
            (AUTO_JOIN, "auto_join_enable"),
        ):
            if name in props:
                flag = props[name].strip().lower()
                if flag not in ("true", "false"):
                    raise ValueError(f"{name} must be true or false, got {flag!r}")
                kwargs[attr] = int(flag == "true")
        return cls(**kwargs)

    @staticmethod
    def kafka_name(attr: str) -> str:
        return _KAFKA_NAMES[attr]

"""What a handler may read and do: the narrow, typed surface of a replica (`RaftContext`).

Role: every RPC handler, poll function and append-path function of the core is typed against
this Protocol, not against `RaftNode` (which implements it): the replica's identity and config,
the log and the membership it implies (KIP-853 `KRaftControlRecordStateMachine`), the current
election state with the few values derived from it, the request manager, the clock of this
step, the three ways to act (`emit` an effect, `send` a request, `append_as_leader`), and the
transition methods of Kafka's `QuorumState` — the only way the state changes.
Also the result type of a poll (`PollResult`): a poll that changed the state says so
(`PollAgain`) instead of polling again itself, so there is one poll loop (`RaftNode.poll`).
Invariants: a handler assigns no attribute of the context (its data lives in the states:
`LeaderState.data`, `FollowerState`'s timers); 25 members at most; this module imports only
leaf modules, so no handler imports `RaftNode` and `core/` has no import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from metaquorum.core.rng import randbelow
from metaquorum.core.value import value

if TYPE_CHECKING:
    from metaquorum.core.config import QuorumConfig
    from metaquorum.core.effects import Effect
    from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
    from metaquorum.core.local_replica import LocalReplica
    from metaquorum.core.log import LogEntry, RaftLog
    from metaquorum.core.request_manager import RequestManager
    from metaquorum.core.rng import RandomSource
    from metaquorum.core.states import EpochState
    from metaquorum.core.voter_set import ListenerEndpoint, VoterSet

NEVER = 2**62


class RaftContext(Protocol):
    """The handler's view of one replica (Kafka: the parts of `KafkaRaftClient` and
    `QuorumState` a `handleXRequest` touches)."""

    # --- identity, configuration, randomness (fixed for the replica's life) ---
    local: LocalReplica
    config: QuorumConfig
    rng: RandomSource
    # --- the log, and the voter set / kraft.version it implies ---
    log: RaftLog
    control: KRaftControlRecordStateMachine
    requests: RequestManager  # per-peer in-flight and backoff (Kafka's RequestManager)

    @property
    def now_ms(self) -> int:
        """The time of the event being handled."""

    @property
    def shutdown_started_ms(self) -> int | None:
        """When a graceful shutdown began (Kafka's GracefulShutdown), None while running."""

    @property
    def voters(self) -> VoterSet:
        """The voter set as of the log's end."""

    @property
    def is_voter(self) -> bool: ...

    # --- the election state (changed only through the methods below) ---
    @property
    def state(self) -> EpochState: ...

    @property
    def leader_id(self) -> int:
        """Kafka's `leaderIdOrSentinel` (-1 when none is known)."""

    @property
    def high_watermark(self) -> int | None: ...

    # --- acting ---
    def emit(self, effect: Effect) -> None: ...

    def send(
        self, destination: int, message: object, endpoint: ListenerEndpoint | None = None
    ) -> None: ...

    def append_as_leader(self, entries: list[LogEntry]) -> None: ...

    # --- transitions (Kafka's QuorumState: the gate, durable state first) ---
    def update_state(self, new: EpochState) -> None: ...

    def transition_to(self, new: EpochState) -> None: ...

    def transition_to_unattached(self, epoch: int, leader_id: int | None = None) -> None: ...

    def transition_to_follower(
        self, epoch: int, leader_id: int, endpoint: ListenerEndpoint | None = None
    ) -> None: ...

    def transition_to_prospective(self) -> None: ...

    def transition_to_candidate(self) -> None: ...

    def transition_to_leader(self) -> None: ...

    def resign(self) -> None: ...

    def maybe_transition(
        self, leader_id: int, epoch: int, endpoint: ListenerEndpoint | None = None
    ) -> None: ...


def random_election_timeout_ms(ctx: RaftContext) -> int:
    """Kafka's `randomElectionTimeoutMs`: election.timeout.ms plus up to as much again."""
    t = ctx.config.election_timeout_ms
    return t + randbelow(ctx.rng, t) if t > 0 else 0


@value
class PollAgain:
    """A poll changed the state: poll the new state at once; the step's next deadline is at
    most `at_most_ms` (a bound the first poll had already set)."""

    at_most_ms: int = NEVER


POLL_AGAIN = PollAgain()
PollResult = int | PollAgain  # the next deadline, or: poll again


def min_deadline(result: PollResult, deadline: int) -> PollResult:
    """`min` that keeps a `PollAgain` one (bounding it)."""
    if isinstance(result, PollAgain):
        return PollAgain(min(result.at_most_ms, deadline))
    return min(result, deadline)

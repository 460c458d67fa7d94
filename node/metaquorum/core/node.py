"""`RaftNode`: one KRaft replica as a pure state machine (Kafka's `KafkaRaftClient`, sans IO).

Role: `handle(event, now_ms) -> Step` applies one event, then polls the current state (timers,
outbound requests, linger), and returns the ordered effects and the next deadline. The RPC
families live in their own modules (`vote`, `begin_quorum_epoch`, `end_quorum_epoch`, `fetch`,
`describe_quorum`), named as Kafka names them and dispatched by message type (`dispatch`); this
module owns the state and the transition gate calls; the append path and the commit
bookkeeping are `append_path.py`. Handlers see it only as a `RaftContext` (`context.py`): they
read through it and act through its methods, and never assign its attributes.

Invariants:
- every state change goes through `transition_to`, which calls the gate and emits
  `PersistElectionState` first when the durable election state changes; an update that keeps
  role, epoch and election state goes through `update_state` (no handler assigns `state`);
- the leader counts only its *flushed* end offset toward the HW (`Flushed` events);
- a follower sends its next Fetch only when everything it appended has come back `Flushed`;
- `HighWatermarkAdvanced` is emitted once per HW change and never goes backwards;
- one poll loop: a poll that changes the state returns `PollAgain`, and `poll` polls again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from metaquorum.core import (
    append_path,
    discovery,
    dispatch,
    epoch_start,
    fetch,
    kraft_upgrade,
    next_state,
    read_index,
    voter_change,
)
from metaquorum.core.config import QuorumConfig
from metaquorum.core.context import PollAgain
from metaquorum.core.effects import (
    AbandonRequest,
    AppendFailed,
    Effect,
    HighWatermarkAdvanced,
    LeaderChanged,
    PersistElectionState,
    SendRequest,
    Step,
    VotersChanged,
)
from metaquorum.core.events import (
    ClientAppend,
    ConfirmReads,
    CreateSnapshot,
    Event,
    Flushed,
    Poll,
    RequestFailed,
    RequestReceived,
    Resign,
    ResponseReceived,
    Shutdown,
    UpgradeKRaftVersion,
)
from metaquorum.core.high_watermark import LeaderProgress
from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
from metaquorum.core.local_replica import LocalReplica
from metaquorum.core.log import LogEntry, RaftLog
from metaquorum.core.poll import initial_state, poll_current_state
from metaquorum.core.read_lease import holds_read_lease
from metaquorum.core.request_manager import RequestManager
from metaquorum.core.rng import RandomSource
from metaquorum.core.states import (
    ElectionState,
    EpochState,
    FollowerState,
    LeaderState,
    ResignedState,
    UnattachedState,
)
from metaquorum.core.transitions import check_in_place_update, check_transition
from metaquorum.core.voter_set import ListenerEndpoint, VoterSet
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.types import METADATA_RAFT_TOPIC, RaftTopic

NEVER = 2**62


class RaftNode:
    """A replica's whole Raft state; see the module docstring for the contract."""

    def __init__(
        self,
        local_id: int,
        *,
        cluster_id: str,
        voters: VoterSet,
        config: QuorumConfig,
        rng: RandomSource,
        log: RaftLog,
        election: ElectionState | None,
        now_ms: int,
        first_correlation_id: int = 0,
        kraft_version: int = 0,
        local_directory_id: str | None = None,
        local_endpoints: tuple[ListenerEndpoint, ...] = (),
        bootstrap_servers: tuple[ListenerEndpoint, ...] = (),
        topic: RaftTopic = METADATA_RAFT_TOPIC,
    ) -> None:
        # Who this replica is; the Kafka pseudo-id nodes of controller.quorum.bootstrap.servers.
        bootstrap = discovery.pseudo_nodes(bootstrap_servers, local_endpoints)
        self.local = LocalReplica(
            local_id, cluster_id, topic, local_directory_id, local_endpoints, bootstrap
        )
        self.config = config
        self.rng = rng
        self.log = log
        # The voter set and kraft.version by offset, fed by the log (KIP-853): start-up values,
        # then the loaded snapshot's, then every VotersRecord / KRaftVersionRecord in the log.
        self.control = KRaftControlRecordStateMachine(voters, kraft_version)
        if log.snapshot is not None:
            self.control.load_snapshot(log.snapshot)
        self.control.on_append(log.entries())
        log.listeners.append(self.control)
        self.requests = RequestManager(
            config.request_timeout_ms, config.retry_backoff_ms, self._abandoned
        )
        self.effects: list[Effect] = []
        self.now_ms = now_ms
        self.shutdown_started_ms: int | None = None
        self._correlation = first_correlation_id
        # What the driver has been told (each reported once, when it changes).
        self._reported_hw = -1
        self._reported_leader: tuple[int, int] | None = None
        self._reported_voters = self.voters
        self._persisted: ElectionState | None = election
        self.state: EpochState = initial_state(self, election or ElectionState(0), now_ms)

    # --- identity and views (the runtime, the simulator and tests read these) ----------------
    @property
    def local_id(self) -> int:
        return self.local.id

    @property
    def topic(self) -> RaftTopic:
        return self.local.topic

    @property
    def voters(self) -> VoterSet:
        """The voter set as of the log's end (every reader of membership uses this one)."""
        return self.control.voter_history.latest()

    @property
    def is_voter(self) -> bool:
        return self.voters.is_voter(self.local.key)

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int:
        """Kafka's `leaderIdOrSentinel` (a Resigned replica still names itself)."""
        return self.state.election(self.local.id).leader_id

    @property
    def progress(self) -> LeaderProgress | None:
        st = self.state
        return st.data.progress if isinstance(st, LeaderState) else None

    def holds_read_lease(self, now_ms: int) -> bool:
        """May this leader answer a consumer read at `now_ms` (core/read_lease.py)?"""
        st = self.state
        if not isinstance(st, LeaderState):
            return False
        voters = st.data.progress.voters
        return holds_read_lease(self.local.id, voters, self.config.fetch_timeout_ms, now_ms)

    def reads_confirmed_after(self, epoch: int, seq: int) -> bool:
        """Did a majority confirm this leader in `epoch` after response `seq` (read_index)?"""
        st = self.state
        if not isinstance(st, LeaderState) or st.epoch != epoch:
            return False
        return read_index.reads_confirmed_after(self.local.id, st.data.progress.voters, seq)

    @property
    def high_watermark(self) -> int | None:
        st = self.state
        if isinstance(st, LeaderState):
            return st.data.progress.high_watermark
        return st.high_watermark

    @property
    def shutting_down(self) -> bool:
        return self.shutdown_started_ms is not None

    @property
    def shutdown_complete(self) -> bool:
        """Kafka's `maybeCompleteShutdown`: an observer, the only voter, or another leader is
        known (so this replica's resignation has been taken over)."""
        if self.shutdown_started_ms is None:
            return False
        if not self.is_voter or self.voters.voter_ids == frozenset({self.local.id}):
            return True
        return self.leader_id >= 0 and self.leader_id != self.local.id

    # --- the step ----------------------------------------------------------------------------
    def start(self, now_ms: int) -> Step:
        """The first step after (re)start: persist the initial state if it changed, poll.
        The only voter of a quorum elects itself at once (Kafka's `KafkaRaftClient.initialize`:
        Prospective -> Candidate -> Leader in this step, no election timeout)."""
        self.effects = []
        self.now_ms = now_ms
        self._persist_if_changed()
        if isinstance(self.state, FollowerState):
            self._note_leader()
        only_voter = self.voters.voter_ids == frozenset({self.local.id})
        if only_voter and isinstance(self.state, UnattachedState | FollowerState | ResignedState):
            self.transition_to_prospective()
        return self._finish(now_ms)

    def handle(self, event: Event, now_ms: int) -> Step:
        self.effects = []
        self.now_ms = now_ms
        handler = _EVENT_HANDLERS.get(type(event))
        if handler is None:
            raise TypeError(f"unknown event {event!r}")
        handler(self, event)
        return self._finish(now_ms)

    def _finish(self, now_ms: int) -> Step:
        deadline = self.poll(now_ms)
        self._report_progress()
        st = self.state
        if isinstance(st, LeaderState) and st.data.resign_requested:  # its removal committed:
            deadline = self.poll(now_ms)  # resign now, as Kafka's next poll-loop iteration
            self._report_progress()
        return Step(self.effects, max(deadline, now_ms))

    def poll(self, now_ms: int) -> int:
        """Kafka's `pollCurrentState`, in one loop: act on timers and send what is due; a
        state change polls the new state. Returns the next deadline."""
        bound = NEVER
        result = poll_current_state(self, now_ms)
        while isinstance(result, PollAgain):
            bound = min(bound, result.at_most_ms)
            result = poll_current_state(self, now_ms)
        return min(result, bound)

    def _report_progress(self) -> None:
        """Tell the driver what changed: the voter set, the HW (and so committed appends and
        voter changes)."""
        voters = self.voters
        if voters is not self._reported_voters:
            if voters != self._reported_voters:
                self.emit(VotersChanged(voters))
            self._reported_voters = voters
        hw = self.high_watermark
        if hw is not None and hw > self._reported_hw:
            self._reported_hw = hw
            self.emit(HighWatermarkAdvanced(hw))
            voter_change.on_high_watermark(self)
            append_path.complete_appends(self, hw)

    def emit(self, effect: Effect) -> None:
        self.effects.append(effect)

    def _abandoned(self, destination: int, correlation_id: int) -> None:
        self.emit(AbandonRequest(destination, correlation_id))

    def send(
        self, destination: int, message: object, endpoint: ListenerEndpoint | None = None
    ) -> None:
        self._correlation += 1
        self.requests.on_request_sent(destination, self._correlation, self.now_ms)
        self.emit(SendRequest(destination, self._correlation, message, endpoint))

    def append_as_leader(self, entries: list[LogEntry]) -> None:
        append_path.append_as_leader(self, entries)

    # --- transitions -------------------------------------------------------------------------
    def transition_to(self, new: EpochState) -> None:
        """The only way the state changes: gate, durable write first, then side effects."""
        old = self.state
        check_transition(old, new, local_id=self.local.id, is_voter=self.is_voter)
        if isinstance(old, LeaderState) and not isinstance(new, LeaderState):
            self._leave_leadership(new)
        self.state = new
        self._persist_if_changed()
        if old.epoch != new.epoch or type(old) is not type(new):
            self.requests.reset()
        if isinstance(new, FollowerState | LeaderState):
            self._note_leader()

    def update_state(self, new: EpochState) -> None:
        """The gate for in-place updates of the current state (same role, epoch and election
        state: a timer, a tally, a download's progress); every other change is a
        `transition_to`. No handler assigns `state` directly."""
        check_in_place_update(self.state, new, local_id=self.local.id)
        self.state = new

    def _persist_if_changed(self) -> None:
        election = self.state.election(self.local.id)
        if election != self._persisted:
            self._persisted = election
            self.emit(PersistElectionState(election))

    def _note_leader(self) -> None:
        pair = (self.leader_id, self.epoch)
        if pair != self._reported_leader:
            self._reported_leader = pair
            self.emit(LeaderChanged(pair[0], pair[1]))

    def _leave_leadership(self, new: EpochState) -> None:
        old = self.state
        assert isinstance(old, LeaderState)
        voter_change.finish(self, Errors.NOT_LEADER_OR_FOLLOWER)
        data = old.data
        for item in data.accumulator.abandon():
            self.emit(AppendFailed(item.append_id, "NOT_LEADER_OR_FOLLOWER"))
        for append_id in sorted(data.pending_appends):
            self.emit(AppendFailed(append_id, "NOT_LEADER_OR_FOLLOWER"))
        data.pending_appends.clear()
        parked = data.purgatory.drain()
        self.state = new  # answer parked fetches with the new state's error and leader hint
        for f in parked:
            fetch.complete_parked_fetch(self, f)

    def transition_to_unattached(self, epoch: int, leader_id: int | None = None) -> None:
        self.transition_to(next_state.unattached(self, epoch, leader_id))

    def transition_to_follower(
        self, epoch: int, leader_id: int, endpoint: ListenerEndpoint | None = None
    ) -> None:
        self.transition_to(next_state.follower(self, epoch, leader_id, endpoint))

    def transition_to_prospective(self) -> None:
        self.transition_to(next_state.prospective(self))

    def transition_to_candidate(self) -> None:
        self.transition_to(next_state.candidate(self))

    def transition_to_leader(self) -> None:
        leader = next_state.leader(self)
        self.transition_to(leader)
        # KIP-595 / KIP-853: LeaderChange [+ KRaftVersion + Voters] (core/epoch_start.py).
        entries = epoch_start.start_of_epoch_entries(
            self, leader.epoch_start_offset, leader.epoch, leader.granting_voters
        )
        append_path.append_as_leader(self, entries)

    def resign(self) -> None:
        """Leader -> Resigned (check-quorum expiry or graceful shutdown)."""
        self.transition_to(next_state.resigned(self))

    def maybe_transition(
        self, leader_id: int, epoch: int, endpoint: ListenerEndpoint | None = None
    ) -> None:
        """Kafka's `maybeTransition`: follow a newer epoch or a newly learned leader (at
        `endpoint` when the response said where it is)."""
        if epoch < self.epoch or leader_id == self.local.id:
            return
        if epoch > self.epoch:
            if leader_id >= 0:
                self.transition_to_follower(epoch, leader_id, endpoint)
            else:
                self.transition_to_unattached(epoch)
        elif (
            leader_id >= 0
            and self.state.election(self.local.id).leader_id < 0
            and not isinstance(self.state, LeaderState | ResignedState)
        ):
            self.transition_to_follower(epoch, leader_id, endpoint)
        else:  # Kafka: "the replica has discovered more endpoints"
            discovery.learn_leader_endpoint(self, leader_id, epoch, endpoint)

    # --- events ------------------------------------------------------------------------------
    def _on_request(self, event: RequestReceived) -> None:
        handler = dispatch.REQUEST_HANDLERS.get(type(event.message))
        if handler is not None:
            handler(self, event)

    def _on_response(self, event: ResponseReceived) -> None:
        if not self.requests.on_response(event.source, event.correlation_id, True, self.now_ms):
            return  # late, duplicated or timed-out response
        handler = dispatch.RESPONSE_HANDLERS.get(type(event.message))
        if handler is not None:
            handler(self, event)

    def _on_request_failed(self, event: RequestFailed) -> None:
        self.requests.on_response(event.destination, event.correlation_id, False, self.now_ms)

    def _on_resign(self, event: Resign) -> None:
        if isinstance(self.state, LeaderState):
            self.resign()

    def _on_shutdown(self, event: Shutdown) -> None:
        if self.shutdown_started_ms is None:
            # The poll of this step hands a leader's log over, then resigns.
            self.shutdown_started_ms = self.now_ms


# Every event the core takes, and what handles it (a new event type without an entry is
# refused loudly by `handle`).
_EVENT_HANDLERS: dict[type, Callable[[RaftNode, Any], None]] = {
    RequestReceived: RaftNode._on_request,
    ResponseReceived: RaftNode._on_response,
    Flushed: lambda node, e: append_path.handle_flushed(node, e.offset),
    ClientAppend: append_path.handle_client_append,
    RequestFailed: RaftNode._on_request_failed,
    CreateSnapshot: append_path.create_snapshot,
    Resign: RaftNode._on_resign,
    UpgradeKRaftVersion: kraft_upgrade.handle_upgrade,
    ConfirmReads: read_index.handle_confirm_reads,
    Shutdown: RaftNode._on_shutdown,
    Poll: lambda node, e: None,
}

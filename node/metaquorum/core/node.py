"""`RaftNode`: one KRaft replica as a pure state machine (Kafka's `KafkaRaftClient`, sans IO).

Role: `handle(event, now_ms) -> Step` applies one event, then polls the current state (timers,
outbound requests, linger), and returns the ordered effects and the next deadline. The RPC
families live in their own modules (`vote`, `begin_quorum_epoch`, `end_quorum_epoch`, `fetch`,
`describe_quorum`), named as Kafka names them and dispatched by message type (`dispatch`); this
module owns the state and the transition gate calls; the append path and the commit
bookkeeping are `append_path.py`.

Invariants:
- every state change goes through `transition_to`, which calls the gate and emits
  `PersistElectionState` first when the durable election state changes; an update that keeps
  role, epoch and election state goes through `update_state` (no handler assigns `state`);
- the leader counts only its *flushed* end offset toward the HW (`Flushed` events);
- a follower sends its next Fetch only when everything it appended has come back `Flushed`;
- `HighWatermarkAdvanced` is emitted once per HW change and never goes backwards.
"""

from __future__ import annotations

from metaquorum.core import (
    append_path,
    discovery,
    dispatch,
    epoch_start,
    fetch,
    kraft_upgrade,
    leader,
    voter_change,
)
from metaquorum.core.config import QuorumConfig
from metaquorum.core.effects import (
    AppendFailed,
    Effect,
    LeaderChanged,
    PersistElectionState,
    SendRequest,
    Step,
)
from metaquorum.core.events import (
    ClientAppend,
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
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.kraft_control import KRaftControlRecordStateMachine
from metaquorum.core.leader_data import LeaderData
from metaquorum.core.log import LogEntry, RaftLog
from metaquorum.core.poll import initial_state, poll_current_state
from metaquorum.core.read_lease import holds_read_lease
from metaquorum.core.request_manager import RequestManager
from metaquorum.core.rng import RandomSource
from metaquorum.core.states import (
    CandidateState,
    ElectionState,
    EpochState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
)
from metaquorum.core.transitions import check_in_place_update, check_transition
from metaquorum.core.vote_tally import VoteTally
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
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
        self.local_id = local_id
        self.topic = topic  # the one topic partition replicated, on the wire
        self.local_directory_id = local_directory_id
        self.local_endpoints = local_endpoints
        # Kafka's pseudo-id nodes for controller.quorum.bootstrap.servers (discovery.py).
        self.bootstrap_nodes = discovery.pseudo_nodes(bootstrap_servers, local_endpoints)
        self.cluster_id = cluster_id
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
        self.requests = RequestManager(config.request_timeout_ms, config.retry_backoff_ms)
        self.hw_moved = False
        self.effects: list[Effect] = []
        self.now_ms = now_ms
        self._correlation = first_correlation_id
        self.reported_hw = -1
        self._reported_leader: tuple[int, int] | None = None
        self.reported_voters = self.voters
        self._persisted: ElectionState | None = election
        self.shutting_down = False
        self.shutdown_started_ms = 0
        self.update_voter_next_ms = 0  # KIP-853: when this voter may next send UpdateRaftVoter
        self.update_voter_acked: tuple[int, int] | None = None  # (epoch, leader) that took it
        self.auto_join_next_ms = 0  # KIP-853 auto-join: when this observer may next ask
        self.state: EpochState = initial_state(self, election or ElectionState(0), now_ms)

    # --- identity ----------------------------------------------------------------------------
    @property
    def voters(self) -> VoterSet:
        """The voter set as of the log's end (every reader of membership uses this one)."""
        return self.control.voter_history.latest()

    @property
    def is_voter(self) -> bool:
        return self.voters.is_voter(self.local_key())

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int:
        """Kafka's `leaderIdOrSentinel` (a Resigned replica still names itself)."""
        return self.state.election(self.local_id).leader_id

    @property
    def leader_data(self) -> LeaderData | None:
        """The current term's data when leading (owned by the LeaderState), else None."""
        st = self.state
        return st.data if isinstance(st, LeaderState) else None

    @property
    def progress(self) -> LeaderProgress | None:
        data = self.leader_data
        return None if data is None else data.progress

    def holds_read_lease(self, now_ms: int) -> bool:
        """May this leader answer a consumer read at `now_ms` (core/read_lease.py)?"""
        st = self.state
        if not isinstance(st, LeaderState):
            return False
        voters = st.data.progress.voters
        return holds_read_lease(self.local_id, voters, self.config.fetch_timeout_ms, now_ms)

    @property
    def high_watermark(self) -> int | None:
        st = self.state
        if isinstance(st, LeaderState):
            return st.data.progress.high_watermark
        return st.high_watermark

    @property
    def shutdown_complete(self) -> bool:
        """Kafka's `maybeCompleteShutdown`: an observer, the only voter, or another leader is
        known (so this replica's resignation has been taken over)."""
        if not self.shutting_down:
            return False
        if not self.is_voter or self.voters.voter_ids == frozenset({self.local_id}):
            return True
        return self.leader_id >= 0 and self.leader_id != self.local_id

    def next_correlation_id(self) -> int:
        self._correlation += 1
        return self._correlation

    def random_election_timeout_ms(self) -> int:
        t = self.config.election_timeout_ms
        return t + self.rng.randrange(t) if t > 0 else 0

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
        only_voter = self.voters.voter_ids == frozenset({self.local_id})
        if only_voter and isinstance(self.state, UnattachedState | FollowerState | ResignedState):
            self.transition_to_prospective()
        return self._finish(now_ms)

    def handle(self, event: Event, now_ms: int) -> Step:
        self.effects = []
        self.now_ms = now_ms
        if isinstance(event, RequestReceived):
            self._handle_request(event)
        elif isinstance(event, ResponseReceived):
            self._handle_response(event)
        elif isinstance(event, Flushed):
            append_path.handle_flushed(self, event.offset)
        elif isinstance(event, ClientAppend):
            append_path.handle_client_append(self, event)
        elif isinstance(event, RequestFailed):
            self.requests.on_response(event.destination, event.correlation_id, False, now_ms)
        elif isinstance(event, CreateSnapshot):
            append_path.create_snapshot(self, event)
        elif isinstance(event, Resign):
            if isinstance(self.state, LeaderState):
                self.resign()
        elif isinstance(event, UpgradeKRaftVersion):
            kraft_upgrade.handle_upgrade(self, event)
        elif isinstance(event, Shutdown) and not self.shutting_down:
            self.shutting_down = True  # the poll below hands a leader's log over, then resigns
            self.shutdown_started_ms = now_ms
        elif not isinstance(event, Poll):
            raise TypeError(f"unknown event {event!r}")
        return self._finish(now_ms)

    def _finish(self, now_ms: int) -> Step:
        deadline = self.poll(now_ms)
        append_path.report_progress(self)
        return Step(self.effects, max(deadline, now_ms))

    def append_as_leader(self, entries: list[LogEntry]) -> None:
        append_path.append_as_leader(self, entries)

    def leader_local_progress(self) -> None:
        append_path.leader_local_progress(self)

    def emit(self, effect: Effect) -> None:
        self.effects.append(effect)

    def send(
        self, destination: int, message: object, endpoint: ListenerEndpoint | None = None
    ) -> None:
        cid = self.next_correlation_id()
        self.requests.on_request_sent(destination, cid, self.now_ms)
        self.emit(SendRequest(destination, cid, message, endpoint))

    # --- transitions -------------------------------------------------------------------------
    def transition_to(self, new: EpochState) -> None:
        """The only way the state changes: gate, durable write first, then side effects."""
        old = self.state
        check_transition(old, new, local_id=self.local_id, is_voter=self.is_voter)
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
        check_in_place_update(self.state, new, local_id=self.local_id)
        self.state = new

    def _persist_if_changed(self) -> None:
        election = self.state.election(self.local_id)
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
        """Kafka 4.3 `QuorumState.transitionToUnattached`: the remaining election timer is kept
        when coming from Unattached, Candidate, Prospective (pre-vote not rejected) or Resigned
        (a newer epoch must not postpone an election already due); a vote cast in this epoch
        is kept (Prospective -> Unattached in the same epoch)."""
        st = self.state
        keeps_timer = isinstance(st, UnattachedState | CandidateState | ResignedState) or (
            isinstance(st, ProspectiveState) and not st.tally.is_rejected
        )
        if keeps_timer:
            assert not isinstance(st, LeaderState | FollowerState)
            deadline = max(st.election_deadline_ms, self.now_ms)
        else:
            deadline = self.now_ms + self.random_election_timeout_ms()
        voted = st.election(self.local_id).voted_key if epoch == st.epoch else None
        hw = self.high_watermark
        self.transition_to(
            UnattachedState(
                epoch, deadline, voted_key=voted, leader_id=leader_id, high_watermark=hw
            )
        )

    def transition_to_follower(
        self, epoch: int, leader_id: int, endpoint: ListenerEndpoint | None = None
    ) -> None:
        voted = None
        if epoch == self.epoch:
            voted = self.state.election(self.local_id).voted_key
        deadline = self.now_ms + self.config.fetch_timeout_ms
        hw = self.high_watermark
        # Kafka's FollowerState keeps the leader's endpoints: a leader that removes itself
        # stays reachable after the uncommitted set without it reaches this replica.
        endpoint = endpoint or discovery.endpoint_of(self, leader_id)
        self.transition_to(
            FollowerState(
                epoch, leader_id, deadline, voted, high_watermark=hw, leader_endpoint=endpoint
            )
        )

    def transition_to_prospective(self) -> None:
        st = self.state
        election = st.election(self.local_id)
        leader = election.leader_id if election.leader_id >= 0 else None
        retries = st.retries + 1 if isinstance(st, CandidateState) else 1
        tally = VoteTally.start(self.voters.voter_ids, self.local_id)
        deadline = self.now_ms + self.random_election_timeout_ms()
        hw = self.high_watermark
        self.transition_to(
            ProspectiveState(
                st.epoch, deadline, tally, election.voted_key, leader, retries, high_watermark=hw
            )
        )

    def transition_to_candidate(self) -> None:
        st = self.state
        retries = st.retries if isinstance(st, ProspectiveState) else 1
        tally = VoteTally.start(self.voters.voter_ids, self.local_id)
        deadline = self.now_ms + self.random_election_timeout_ms()
        self.transition_to(
            CandidateState(
                st.epoch + 1, deadline, tally, retries, high_watermark=self.high_watermark
            )
        )

    def transition_to_leader(self) -> None:
        st = self.state
        assert isinstance(st, CandidateState)
        start = self.log.end_offset
        cq = self.now_ms + self.config.check_quorum_timeout_ms if len(self.voters) > 1 else NEVER
        data = LeaderData(self.local_id, self.voters.voter_keys(), start, self.config)
        if self.control.latest_kraft_version() < 1:
            # KIP-853 upgrade: the leader's own entry now, the others' from UpdateRaftVoter.
            local = self.voters.update_voter_ignoring_directory_id(self.local_voter_node())
            data.volatile_voters = local or self.voters
        self.transition_to(LeaderState(st.epoch, start, st.tally.granted, cq, self.now_ms, data))
        # KIP-595 / KIP-853: LeaderChange [+ KRaftVersion + Voters] (core/epoch_start.py).
        append_path.append_as_leader(
            self, epoch_start.start_of_epoch_entries(self, start, st.epoch, st.tally.granted)
        )

    def resign(self) -> None:
        """Leader -> Resigned (check-quorum expiry or graceful shutdown)."""
        st = self.state
        assert isinstance(st, LeaderState)
        successors = tuple(st.data.progress.voters_by_descending_offset())
        deadline = self.now_ms + self.random_election_timeout_ms()
        hw = self.high_watermark
        self.transition_to(ResignedState(st.epoch, deadline, frozenset(successors), successors, hw))

    def maybe_transition(
        self, leader_id: int, epoch: int, endpoint: ListenerEndpoint | None = None
    ) -> None:
        """Kafka's `maybeTransition`: follow a newer epoch or a newly learned leader (at
        `endpoint` when the response said where it is)."""
        if epoch < self.epoch or leader_id == self.local_id:
            return
        if epoch > self.epoch:
            if leader_id >= 0:
                self.transition_to_follower(epoch, leader_id, endpoint)
            else:
                self.transition_to_unattached(epoch)
        elif (
            leader_id >= 0
            and self.state.election(self.local_id).leader_id < 0
            and not isinstance(self.state, LeaderState | ResignedState)
        ):
            self.transition_to_follower(epoch, leader_id, endpoint)
        else:  # Kafka: "the replica has discovered more endpoints"
            discovery.learn_leader_endpoint(self, leader_id, epoch, endpoint)

    # --- dispatch ----------------------------------------------------------------------------
    def _handle_request(self, event: RequestReceived) -> None:
        handler = dispatch.REQUEST_HANDLERS.get(type(event.message))
        if handler is not None:
            handler(self, event)

    def _handle_response(self, event: ResponseReceived) -> None:
        if not self.requests.on_response(event.source, event.correlation_id, True, self.now_ms):
            return  # late, duplicated or timed-out response
        handler = dispatch.RESPONSE_HANDLERS.get(type(event.message))
        if handler is not None:
            handler(self, event)

    # --- polling -----------------------------------------------------------------------------
    def poll(self, now_ms: int) -> int:
        """Kafka's `pollCurrentState`: act on timers and send what is due; the next deadline."""
        return poll_current_state(self, now_ms)

    def note_voter_fetch(self, key: ReplicaKey) -> None:
        leader.update_check_quorum_for_following_voter(self, key)

    def voter_key(self, voter_id: int) -> ReplicaKey:
        """A voter's key as the voter set names it (no directory id in a static set)."""
        node = self.voters.node(voter_id)
        return node.key if node is not None else ReplicaKey(voter_id)

    @property
    def listener_name(self) -> str:
        """The controller listener (Kafka's `channel.listenerName()`): the first local one."""
        return self.local_endpoints[0].name if self.local_endpoints else "CONTROLLER"

    def local_key(self) -> ReplicaKey:
        return ReplicaKey(self.local_id, self.local_directory_id)

    def local_voter_node(self) -> VoterNode:
        """This replica as a voter entry: key, endpoints, kraft.version 0-1 (Kafka 4.3's)."""
        return VoterNode(self.local_key(), self.local_endpoints, 0, 1)

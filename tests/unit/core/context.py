"""A single-node test harness in the style of Kafka's `RaftClientTestContext`.

Build a `RaftNode` with a given voter set, persisted election state and log, then drive it
with requests, responses, flushes and time, and inspect the effects it returns.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from metaquorum.core.config import QuorumConfig
from metaquorum.core.effects import (
    AppendEntries,
    Effect,
    FlushLog,
    HighWatermarkAdvanced,
    PersistElectionState,
    SendRequest,
    SendResponse,
    Step,
)
from metaquorum.core.events import (
    ClientAppend,
    Event,
    Flushed,
    Poll,
    RequestReceived,
    ResponseReceived,
)
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import LogEntry, RaftLog, leader_change_message
from metaquorum.core.node import RaftNode
from metaquorum.core.states import ElectionState
from metaquorum.core.voter_set import ListenerEndpoint, VoterSet
from metaquorum.protocol.messages import (
    BeginQuorumEpochRequestData,
    EndQuorumEpochRequestData,
    FetchRequestData,
    FetchResponseData,
    VoteRequestData,
    VoteResponseData,
)
from metaquorum.protocol.types import Uuid

CLUSTER = "test-cluster-id-000000"
TOPIC = "__cluster_metadata"


@dataclass
class RaftTestContext:
    local_id: int
    voters: list[int]
    epochs: list[int] = field(default_factory=list)
    election: ElectionState | None = None
    config: QuorumConfig = field(default_factory=QuorumConfig)
    seed: int = 0
    now: int = 0
    node: RaftNode = field(init=False)
    effects: list[Effect] = field(default_factory=list)
    deadline: int = 0
    _history: list[SendRequest] = field(default_factory=list)
    watchers: list[Callable[[RaftTestContext], None]] = field(default_factory=list)
    # KIP-853: a voter set with directory ids and endpoints, the start-up kraft.version, this
    # replica's directory id and endpoints (defaults: a kraft.version 0 set of bare ids).
    voter_set: VoterSet | None = None
    kraft_version: int = 0
    directory_id: str | None = None
    endpoints: tuple[ListenerEndpoint, ...] = ()
    bootstrap: tuple[ListenerEndpoint, ...] = ()  # controller.quorum.bootstrap.servers
    log_entries: list[LogEntry] | None = None

    def __post_init__(self) -> None:
        log = RaftLog(
            self.log_entries
            if self.log_entries is not None
            else [LogEntry(i, e, b"x%d" % i) for i, e in enumerate(self.epochs)]
        )
        self.node = RaftNode(
            self.local_id,
            cluster_id=CLUSTER,
            voters=self.voter_set or VoterSet.of(self.voters),
            kraft_version=self.kraft_version,
            local_directory_id=self.directory_id,
            local_endpoints=self.endpoints,
            bootstrap_servers=self.bootstrap,
            config=self.config,
            rng=random.Random(self.seed),
            log=log,
            election=self.election,
            now_ms=self.now,
        )
        self._take(self.node.start(self.now))

    # --- driving -----------------------------------------------------------------------------
    def _take(self, step: Step) -> list[Effect]:
        self.effects = step.effects
        self._history.extend(e for e in step.effects if isinstance(e, SendRequest))
        for watch in self.watchers:
            watch(self)
        self.deadline = step.next_deadline_ms
        return self.effects

    def handle(self, event: Event) -> list[Effect]:
        return self._take(self.node.handle(event, self.now))

    def advance(self, ms: int) -> list[Effect]:
        self.now += ms
        return self.handle(Poll())

    def advance_to_deadline(self) -> list[Effect]:
        self.now = max(self.now, self.deadline)
        return self.handle(Poll())

    def request(self, src: int, message: Any, cid: int = 99) -> list[Effect]:
        return self.handle(RequestReceived(src, cid, message))

    def respond(self, src: int, message: Any, entries: tuple[LogEntry, ...] = ()) -> list[Effect]:
        """Answer the latest request this node sent to `src`."""
        sent = [e for e in self._history if e.destination == src]
        cid = sent[-1].correlation_id if sent else 0
        return self.handle(ResponseReceived(src, cid, message, entries))

    def flush(self) -> list[Effect]:
        return self.handle(Flushed(self.node.log.end_offset))

    def append(self, append_id: int, *values: bytes) -> list[Effect]:
        return self.handle(ClientAppend(append_id, values))

    # --- inspecting --------------------------------------------------------------------------
    def sent(self, kind: type) -> list[SendRequest]:
        """Requests of `kind` sent in the last step."""
        return [
            e for e in self.effects if isinstance(e, SendRequest) and isinstance(e.message, kind)
        ]

    def response(self) -> SendResponse:
        rs = [e for e in self.effects if isinstance(e, SendResponse)]
        assert len(rs) == 1, self.effects
        return rs[0]

    def persisted(self) -> list[ElectionState]:
        return [e.election for e in self.effects if isinstance(e, PersistElectionState)]

    def kinds(self) -> list[str]:
        return [type(e).__name__ for e in self.effects]

    def hw_reports(self) -> list[int]:
        return [e.high_watermark for e in self.effects if isinstance(e, HighWatermarkAdvanced)]

    def appended(self) -> list[LogEntry]:
        return [x for e in self.effects if isinstance(e, AppendEntries) for x in e.entries]

    def flush_requested(self) -> bool:
        return any(isinstance(e, FlushLog) for e in self.effects)

    # --- driving whole phases ----------------------------------------------------------------
    def become_leader(self) -> None:
        """Election timeout -> Prospective -> (pre-votes) -> Candidate -> (votes) -> Leader."""
        self.advance_to_deadline()
        majority = len(self.voters) // 2 + 1
        others = [v for v in self.voters if v != self.local_id][: majority - 1]
        for v in others:
            self.respond(v, vote_response(self.node.epoch, True))
        for v in others:
            self.respond(v, vote_response(self.node.epoch, True))
        assert self.node.state.role.value == "Leader", self.node.state
        self.flush()


# --- message builders ----------------------------------------------------------------------
def vote_request(
    epoch: int,
    candidate: int,
    last_epoch: int = 0,
    last_offset: int = 0,
    *,
    pre_vote: bool = False,
    cluster_id: str | None = CLUSTER,
    voter_id: int = -1,
) -> VoteRequestData:
    p = VoteRequestData.PartitionData(
        partition_index=0,
        replica_epoch=epoch,
        replica_id=candidate,
        last_offset_epoch=last_epoch,
        last_offset=last_offset,
        pre_vote=pre_vote,
    )
    return VoteRequestData(
        cluster_id=cluster_id,
        voter_id=voter_id,
        topics=[VoteRequestData.TopicData(topic_name=TOPIC, partitions=[p])],
    )


def vote_response(epoch: int, granted: bool, leader: int = -1, error: int = 0) -> VoteResponseData:
    p = VoteResponseData.PartitionData(
        partition_index=0,
        error_code=error,
        leader_id=leader,
        leader_epoch=epoch,
        vote_granted=granted,
    )
    return VoteResponseData(topics=[VoteResponseData.TopicData(topic_name=TOPIC, partitions=[p])])


def fetch_request(
    replica: int,
    epoch: int,
    offset: int,
    last_epoch: int,
    *,
    hw: int = -1,
    max_wait: int = 500,
    cluster_id: str | None = CLUSTER,
    topic_id: Uuid = Uuid.METADATA_TOPIC_ID,
) -> FetchRequestData:
    p = FetchRequestData.FetchPartition(
        partition=0,
        current_leader_epoch=epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_epoch,
        high_watermark=hw,
    )
    return FetchRequestData(
        cluster_id=cluster_id,
        replica_state=FetchRequestData.ReplicaState(replica_id=replica),
        max_wait_ms=max_wait,
        topics=[FetchRequestData.FetchTopic(topic=TOPIC, topic_id=topic_id, partitions=[p])],
    )


def fetch_response(
    leader: int,
    epoch: int,
    *,
    hw: int = -1,
    error: int = 0,
    diverging: tuple[int, int] | None = None,
) -> FetchResponseData:
    div = FetchResponseData.EpochEndOffset()
    if diverging is not None:
        div = FetchResponseData.EpochEndOffset(epoch=diverging[0], end_offset=diverging[1])
    p = FetchResponseData.PartitionData(
        partition_index=0,
        error_code=error,
        high_watermark=hw,
        diverging_epoch=div,
        current_leader=FetchResponseData.LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch),
    )
    return FetchResponseData(
        responses=[
            FetchResponseData.FetchableTopicResponse(
                topic=TOPIC, topic_id=Uuid.METADATA_TOPIC_ID, partitions=[p]
            )
        ]
    )


def begin_epoch(leader: int, epoch: int) -> BeginQuorumEpochRequestData:
    p = BeginQuorumEpochRequestData.PartitionData(
        partition_index=0, leader_id=leader, leader_epoch=epoch
    )
    return BeginQuorumEpochRequestData(
        cluster_id=CLUSTER,
        topics=[BeginQuorumEpochRequestData.TopicData(topic_name=TOPIC, partitions=[p])],
    )


def end_epoch(leader: int, epoch: int, successors: list[int]) -> EndQuorumEpochRequestData:
    p = EndQuorumEpochRequestData.PartitionData(
        partition_index=0,
        leader_id=leader,
        leader_epoch=epoch,
        preferred_candidates=[
            EndQuorumEpochRequestData.ReplicaInfo(candidate_id=c) for c in successors
        ],
    )
    return EndQuorumEpochRequestData(
        cluster_id=CLUSTER,
        topics=[EndQuorumEpochRequestData.TopicData(topic_name=TOPIC, partitions=[p])],
    )


def entries(start: int, epochs: list[int]) -> tuple[LogEntry, ...]:
    return tuple(LogEntry(start + i, e, b"x%d" % (start + i)) for i, e in enumerate(epochs))


def leader_change(
    offset: int, epoch: int, leader: int, voters: list[int], granting: list[int]
) -> LogEntry:
    return LogEntry.of_control(offset, epoch, leader_change_message(leader, voters, granting))


def voted(epoch: int, candidate: int) -> ElectionState:
    return ElectionState(epoch, -1, ReplicaKey(candidate))

"""Dynamic voter sets in the simulator (KIP-853, issue 14): directory ids, the reconfiguration
workload, and the membership invariants.

Role: in a `kraft_version=1` run every replica has a directory id (a disk wipe gives it a new
one, so it comes back as an observer) and the quorum starts from a bootstrap voter set with
directory ids and endpoints, as `format --initial-controllers` writes it. Every
`membership_interval_ms` of the fault phase an operator asks the newest leader for one change,
as the Kubernetes operator would: replace a wiped voter (remove its old key, later add the new
one), add an observer, or remove a voter (the leader too, sometimes); requests also race
elections since they go to whichever replica leads now. The harness answers a replica's
ApiVersions the way the runtime does (kraft.version 0-1).
Invariants checked here, after every step, besides `InvariantChecker`'s:
- `voter-change-single`: a VotersRecord differs from the set before it by at most one voter
  (stricter than Kafka's overlapping-majority rule, which would allow {1,2,3} -> {1,2,4});
- `one-uncommitted-voter-set`: a leader's log has at most one membership change (a VotersRecord
  whose ids differ from the set before it) above what is committed;
- `voter-change-own-epoch`: no VotersRecord of a term is appended before that term's HW exists;
- `voter-set-agreement`: every replica derives the same voter set at the committed end;
- `non-voter-campaigns`: a replica that is not a voter (by key) never becomes Prospective or
  Candidate;
- `leader-majority`: an elected leader's granting voters are a majority of the set in its log;
- `removed-leader-resigns`: a leader whose own removal committed resigns in that same step;
- liveness (in `final_checks`): every accepted change was answered; in a `kraft_upgrade` run
  kraft.version 1 is committed (`kraft-upgrade-liveness`); every running voter's entry in the
  leader's set has the endpoints it runs with (`voter-endpoints-liveness`).
Issue 33's `kraft_upgrade` runs start from a static kraft.version 0 quorum (endpoints, no
directory ids): the operator asks the leader for the upgrade (`UpgradeKRaftVersion`) until it
is written, also after the faults, and only then changes the set; with `move_endpoints` an
action may instead move a voter to another host name (it restarts and sends UpdateRaftVoter).
The state of all this (directory ids, pseudo-id routes, requests in flight, the committed
voter-set index) is `Membership`'s own; it reaches the simulation only through `World`
(sim/surface.py).
"""

from __future__ import annotations

from bisect import bisect_right

from metaquorum.core.effects import SendRequest
from metaquorum.core.events import UpgradeKRaftVersion
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import EntryKind, LogEntry
from metaquorum.core.node import RaftNode
from metaquorum.core.rng import randbelow, randint
from metaquorum.core.states import CandidateState, LeaderState, ProspectiveState
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    ApiVersionsResponseData,
    RemoveRaftVoterRequestData,
    VotersRecord,
)
from metaquorum.protocol.types import Uuid
from metaquorum.sim.surface import Kind, World

ADMIN = 1000  # the operator's "node id": requests from it, answers to it
LISTENER = "CONTROLLER"
BASE_PORT = 9000  # node N listens on BASE_PORT + N


def endpoint_of(nid: int, moved: int = 0) -> ListenerEndpoint:
    """Node `nid`'s address; after its `moved`-th endpoint move, another host name (the port,
    which routes, stays)."""
    host = f"node-{nid}" if moved == 0 else f"node-{nid}-m{moved}"
    return ListenerEndpoint(LISTENER, host, BASE_PORT + nid)


def api_versions_answer() -> ApiVersionsResponseData:
    """What the runtime answers: this replica supports kraft.version 0-1."""
    key = ApiVersionsResponseData.SupportedFeatureKey(
        name="kraft.version", min_version=0, max_version=1
    )
    return ApiVersionsResponseData(supported_features=[key])


class Membership:
    """The KIP-853 side of one run: `enabled` in kraft.version 1 mixes (directory ids, a
    bootstrap voter set with endpoints); in a static run only `voter_set` and the pseudo-id
    routing (a no-op there) are used."""

    def __init__(
        self, world: World, voter_ids: list[int], enabled: bool, static_start: bool = False
    ) -> None:
        self.world = world
        self.enabled = enabled
        # `kraft_upgrade` runs: a kraft.version 0 quorum from `controller.quorum.voters`
        # (endpoints, no directory ids) whose replicas have directory ids, upgraded to 1.
        self.static_start = static_start
        self.moved: dict[int, int] = dict.fromkeys(world.all_ids, 0)  # endpoint moves so far
        self.bootstrap_ids = frozenset(voter_ids)
        # Directory ids (a wipe draws a new one), drawn from the run's RNG in id order.
        self.directory_ids: dict[int, str | None] = dict.fromkeys(world.all_ids)
        if enabled:
            for n in world.all_ids:
                self.directory_ids[n] = self.new_directory_id()
        if static_start:
            voters = {i: (endpoint_of(i).host, endpoint_of(i).port) for i in voter_ids}
            self.voter_set = VoterSet.from_endpoints(LISTENER, voters)
        elif enabled:
            self.voter_set = VoterSet.from_nodes(
                VoterNode(ReplicaKey(i, self.directory_ids[i]), (endpoint_of(i),), 0, 1)
                for i in voter_ids
            )
        else:
            self.voter_set = VoterSet.of(voter_ids)
        # KIP-853 bootstrap servers: a request to a pseudo-id goes to the node at its endpoint
        # and its answer comes back from the pseudo-id (`route`, `answer_source`).
        self.pseudo: dict[tuple[int, int], int] = {}
        self.admin_pending: dict[int, tuple[int, int]] = {}  # cid -> (node, incarnation)
        self.admin_answers: dict[int, int] = {}  # error code -> count
        self.next_admin_cid = 0
        self.committed_voters: list[tuple[int, frozenset[int]]] = []
        self.committed_scanned = 0
        self.leader_checked: dict[int, int] = {}  # node -> epoch whose election was checked
        self.removed_leader_reported: dict[int, int] = {}  # node -> epoch reported

    # --- identity and addresses ------------------------------------------------------------
    def new_directory_id(self) -> str:
        rng = self.world.rng
        return str(Uuid(rng.getrandbits(63), rng.getrandbits(63)))

    def local_endpoints(self, nid: int) -> tuple[ListenerEndpoint, ...]:
        return (endpoint_of(nid, self.moved[nid]),) if self.enabled else ()

    def bootstrap_servers(self) -> tuple[ListenerEndpoint, ...]:
        """kraft.version 1 mixes: every replica is configured with every node's address as
        `controller.quorum.bootstrap.servers` (the core discovers the leader through pseudo-ids)."""
        if not self.enabled or self.static_start:  # a static quorum finds its voters' endpoints
            return ()
        return tuple(endpoint_of(n) for n in self.world.all_ids)

    def route(self, nid: int, request: SendRequest) -> int:
        """The replica a request goes to: a pseudo-id (< -1) is the node at its endpoint, and
        the answer is to come back from the pseudo-id (`answer_source`)."""
        if request.destination >= -1 or request.endpoint is None:
            return request.destination
        real = request.endpoint.port - BASE_PORT  # `endpoint_of`'s inverse
        self.pseudo[(nid, request.correlation_id)] = request.destination
        return real

    def answer_source(self, requester: int, cid: int, replica: int) -> int:
        """The id an answer to `requester`'s request `cid` comes from (its pseudo-id, if any)."""
        return self.pseudo.get((requester, cid), replica)

    def replace_disk(self, nid: int) -> None:
        """A wiped replica is a new one: a new directory id (the checker forgets its votes)."""
        self.directory_ids[nid] = self.new_directory_id()
        self.world.checker.on_wipe(nid)

    # --- the operator ----------------------------------------------------------------------
    def operator_action(self) -> None:
        """One operator request to the newest leader (the next one is scheduled here too)."""
        w = self.world
        p = w.params
        rng = w.rng
        # A kraft.version upgrade is retried after the faults too (its liveness is checked).
        last = p.end_ms - p.liveness_bound_ms // 2 if p.kraft_upgrade else p.fault_end_ms
        if w.now + p.membership_interval_ms < last:
            w.push(w.now + p.membership_interval_ms, Kind.MEMBERSHIP, 0, None)
        leader = w.current_leader()
        if leader is None:
            return
        node = w.nodes[leader]
        assert node is not None
        if node.control.latest_kraft_version() < 1:
            # kraft.version 0 (`kraft_upgrade` runs): `kafka-features upgrade` until it takes.
            w.record(f"{w.now} admin {leader} upgrade kraft.version 1\n")
            w.step(leader, UpgradeKRaftVersion(node.epoch, 1))
            return
        if w.now >= p.fault_end_ms:
            return
        voters = node.voters
        if p.move_endpoints > 0 and rng.random() < p.move_endpoints:
            # An operator moves a voter to another address (a pod rescheduled): it restarts
            # with new endpoints and tells the leader (UpdateRaftVoter).
            moving = voters.sorted_ids()[randbelow(rng, len(voters))]
            w.push(w.now + 1, Kind.FAULT, 0, ("move", moving, randint(rng, 200, 1000)))
            return
        request: object
        # A voter whose replica now runs under another directory id (a wiped disk): replace it.
        ids = self.directory_ids
        stale = [
            n.key
            for n in voters.nodes
            if n.key.directory_id is not None and ids[n.key.id] != n.key.directory_id
        ]
        missing = [i for i in w.all_ids if i not in voters]
        roll = rng.random()
        if stale and len(voters) > 1:
            request = self._remove(stale[0])
        elif missing and (roll < 0.6 or len(voters) <= 2):
            nid = missing[randbelow(rng, len(missing))]
            ep = endpoint_of(nid)
            directory = ids[nid]
            assert directory is not None  # every replica of a kraft.version 1 run has one
            request = AddRaftVoterRequestData(
                cluster_id=w.cluster_id,
                voter_id=nid,
                voter_directory_id=Uuid.from_string(directory),
                listeners=[
                    AddRaftVoterRequestData.Listener(name=ep.name, host=ep.host, port=ep.port)
                ],
                ack_when_committed=rng.random() < 0.8,
            )
        elif len(voters) > 2:
            request = self._remove(voters.voter_keys()[randbelow(rng, len(voters))])
        else:
            return
        self.next_admin_cid += 1
        w.record(f"{w.now} admin {leader} {self.next_admin_cid} {type(request).__name__}\n")
        w.push(w.now + 1, Kind.REQUEST, leader, (ADMIN, self.next_admin_cid, request))

    def _remove(self, key: ReplicaKey) -> RemoveRaftVoterRequestData:
        directory = Uuid.ZERO if key.directory_id is None else Uuid.from_string(key.directory_id)
        return RemoveRaftVoterRequestData(
            cluster_id=self.world.cluster_id, voter_id=key.id, voter_directory_id=directory
        )

    def admin_received(self, nid: int, cid: int) -> None:
        """Replica `nid` (running) took the operator's request `cid`."""
        self.admin_pending[cid] = (nid, self.world.incarnation[nid])

    def admin_answer(self, cid: int, message: object) -> None:
        if self.admin_pending.pop(cid, None) is None:
            return
        code = getattr(message, "error_code", -1)
        self.admin_answers[code] = self.admin_answers.get(code, 0) + 1
        self.world.record(f"{self.world.now} admin-answer {cid} {code}\n")

    def lost_since_ack(self, voter: int, st: LeaderState, hw: int) -> bool:
        """Voter `voter` acknowledged offset hw-1 to this leader, and its disk was wiped since
        (its replica runs under another directory id than the voter's key)."""
        progress = st.data.progress.voters.get(voter)
        if progress is None or progress.end_offset is None or progress.end_offset < hw:
            return False
        directory = progress.directory_id
        return directory is not None and directory != self.directory_ids[voter]

    def wipe_keeps_majority(self, victim: int) -> bool:
        """Would every voter set in play (each replica's newest) keep a majority, plus one, of
        voters whose replica still runs under the voter's directory id once `victim` is wiped?"""
        nodes = self.world.nodes
        sets = [n.voters for n in nodes.values() if n is not None] or [self.voter_set]
        ids = self.directory_ids
        for voters in sets:
            intact = sum(
                1
                for k in voters.nodes
                if k.key.id != victim and ids[k.key.id] == k.key.directory_id
            )
            # One intact voter to spare: a wipe must not bring the quorum to its limit, where
            # one more unavailable voter (e.g. a leader that removed itself, with an
            # uncommitted tail, cannot campaign and refuses shorter logs) stops it
            # (five-membership seed 131 under the plain-majority rule: no leader after the
            # faults stopped).
            if intact < voters.majority + 1:
                return False
        return True

    def final_checks(self, leader: RaftNode | None) -> None:
        """Liveness: every change a replica accepted was answered (commit, error, expiry or the
        loss of leadership), unless that replica crashed since (its connection dropped); in a
        `kraft_upgrade` run kraft.version 1 is committed; every running voter's entry in the
        leader's set has the endpoints it runs with (moved voters sent UpdateRaftVoter)."""
        w = self.world
        for cid, (nid, incarnation) in sorted(self.admin_pending.items()):
            if w.nodes[nid] is not None and w.incarnation[nid] == incarnation:
                w.checker.fail("membership-liveness", f"request {cid} to node {nid} never answered")
        if leader is None:
            return
        hw = leader.high_watermark
        if w.params.kraft_upgrade and (hw is None or leader.control.kraft_version_at(hw - 1) < 1):
            w.checker.fail("kraft-upgrade-liveness", "kraft.version 1 never committed")
        if leader.control.latest_kraft_version() < 1:
            return
        for v in leader.voters.nodes:
            i = v.key.id
            running = w.nodes[i] is not None and self.directory_ids[i] == v.key.directory_id
            if running and v.endpoints != self.local_endpoints(i):
                w.checker.fail(
                    "voter-endpoints-liveness",
                    f"voter {i} runs at {self.local_endpoints(i)[0].host}, the voter set says "
                    f"{[e.host for e in v.endpoints]}",
                )

    # --- invariants ------------------------------------------------------------------------
    def on_append(self, nid: int, node: RaftNode, entries: tuple[LogEntry, ...]) -> None:
        checker = self.world.checker
        # A leader's opening batch (LeaderChange [+ KRaftVersion + Voters]) restates the set.
        opening = any(e.kind is EntryKind.LEADER_CHANGE for e in entries)
        for e in entries:
            if e.kind is not EntryKind.KRAFT_VOTERS or not isinstance(e.control, VotersRecord):
                continue
            before = node.control.voters_at(e.offset - 1).voter_ids
            after = frozenset(v.voter_id for v in e.control.voters)
            if len(before ^ after) > 1:
                checker.fail(
                    "voter-change-single",
                    f"node {nid} offset {e.offset}: voters {sorted(before)} -> {sorted(after)}",
                )
            st = node.state
            own_term_change = isinstance(st, LeaderState) and e.epoch == st.epoch and not opening
            if own_term_change:
                assert isinstance(st, LeaderState)
                if st.data.progress.high_watermark is None:
                    checker.fail(
                        "voter-change-own-epoch",
                        f"leader {nid} appended a voter change at {e.offset} before its epoch's HW",
                    )

    def after_step(self, nid: int, node: RaftNode) -> None:
        checker = self.world.checker
        st = node.state
        if isinstance(st, ProspectiveState | CandidateState) and not node.is_voter:
            checker.fail("non-voter-campaigns", f"node {nid} ({node.local.key}) campaigns")
        if isinstance(st, LeaderState):
            self._check_leader(nid, node, st)
        committed = checker.committed
        hw_node = node.high_watermark
        if hw_node is not None and committed:
            at = min(hw_node, node.log.end_offset, len(committed)) - 1
            if at >= node.log.start_offset and at >= 0:
                expected = self._committed_voters_at(at)
                if expected is not None and node.control.voters_at(at).voter_ids != expected:
                    checker.fail(
                        "voter-set-agreement",
                        f"node {nid} voters at {at}: {node.control.voters_at(at).sorted_ids()}, "
                        f"committed log says {sorted(expected)}",
                    )

    def _check_leader(self, nid: int, node: RaftNode, st: LeaderState) -> None:
        checker = self.world.checker
        if self.leader_checked.get(nid) != st.epoch:
            # An elected leader's granting voters (itself included) are a majority of the voter
            # set in its log when it won.
            self.leader_checked[nid] = st.epoch
            voters = node.voters
            granted = st.granting_voters & voters.voter_ids
            if node.is_voter and len(granted) < voters.majority:
                checker.fail(
                    "leader-majority",
                    f"leader {nid} of epoch {st.epoch} won with {sorted(st.granting_voters)} "
                    f"of {voters.sorted_ids()}",
                )
        hw = st.data.progress.high_watermark
        # A leader whose removal is committed resigns in the step that commits it (Kafka's poll
        # loop resigns on its next iteration, without waiting for an event).
        removed = not node.is_voter and hw is not None and node.control.latest_voters_offset() < hw
        if removed and self.removed_leader_reported.get(nid) != st.epoch:
            self.removed_leader_reported[nid] = st.epoch
            checker.fail(
                "removed-leader-resigns",
                f"leader {nid} still leads epoch {st.epoch} after a step that committed "
                f"its removal (HW {hw})",
            )
        first = max(0 if hw is None else hw, len(checker.committed))
        pending = node.control.voter_history.changes_from(first)
        if pending > 1:
            checker.fail(
                "one-uncommitted-voter-set", f"leader {nid} has {pending} voter sets above its HW"
            )

    def _committed_voters_at(self, at: int) -> frozenset[int]:
        """The voter ids as of offset `at` by the committed log alone (an index of its
        VotersRecords, extended as the committed prefix grows)."""
        committed = self.world.checker.committed
        index = self.committed_voters
        for o in range(self.committed_scanned, len(committed)):
            e = committed[o]
            if e.kind is EntryKind.KRAFT_VOTERS and isinstance(e.control, VotersRecord):
                index.append((o, frozenset(v.voter_id for v in e.control.voters)))
        self.committed_scanned = len(committed)
        i = bisect_right(index, at, key=lambda x: x[0])
        return index[i - 1][1] if i else self.bootstrap_ids

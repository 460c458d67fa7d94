"""The invariant `leader-resigns-in-time`: a leader cut off from a majority of its current
voter set resigns by check-quorum (KIP-595 check-quorum, KAFKA-15489: a window of 1.5 x
controller.quorum.fetch.timeout.ms; issue 33).

Role: from the simulator's own view of the world (links blocked, replicas down or paused,
replicas running under another directory id than their voter key), work out when a running
leader can hear fetches from fewer voters of the set *as of its log's end* (itself included
while it is a voter, as `core/check_quorum.py` counts) than that set's majority. From then on
(once the fetches sent before the cut have arrived: three times the maximum link delay, a
duplicate's) it may restart its check-quorum window at most once more (Kafka's window closes
when a majority fetched since it opened, and fetches from before the cut may complete that
majority), and must resign by its window's deadline (+50 ms). A leader that restarts its window
twice while cut off is counting fetches it must not count (a removed voter's, an observer's);
one still leading past its deadline ignores its own timer. So Kafka's bound from the cut is
two windows at worst (6 s with the defaults), and the check is exact rather than a timeout.
Evaluated after a leader's steps (at most every 10 ms of virtual time), after every fault and
at the end; a cut-off is dated from the first evaluation that sees it (lenient, never early).
Invariants of the check itself: a paused leader is not judged (its timers wait; the watch
starts over when it resumes); a voter that is down or paused, or whose link *to* the leader is
cut, does not count (a fetch counts on arrival, so a cut of the other direction does not stop
it: chaos seed 28); each cut-off is counted once as the worst moment `leader-cut-off`; when the
set of voters the leader hears changes while it is cut off, the watch starts over (lenient).
"""

from __future__ import annotations

from typing import Protocol

from metaquorum.core.node import RaftNode
from metaquorum.core.states import LeaderState
from metaquorum.sim.membership import Membership
from metaquorum.sim.network import Network
from metaquorum.sim.reach import Reach
from metaquorum.sim.surface import World

SLACK_MS = 50


class Watched(World, Protocol):
    @property
    def net(self) -> Network: ...

    @property
    def paused_until(self) -> dict[int, int]: ...

    @property
    def membership(self) -> Membership: ...

    @property
    def reach(self) -> Reach: ...


class ResignWatch:
    def __init__(self, world: Watched) -> None:
        self.world = world
        self.in_flight_ms = 3 * world.params.link.delay_max_ms
        # (leader, epoch) -> [cut off since, its deadline last seen, window restarts since]
        self.cut: dict[tuple[int, int], list[int]] = {}
        self.heard: dict[tuple[int, int], frozenset[int]] = {}  # the voters it hears then
        self.last_check: dict[int, int] = {}

    def check_all(self) -> None:
        for nid, node in self.world.nodes.items():
            if node is not None and isinstance(node.state, LeaderState):
                self.check(nid, node)

    def check(self, nid: int, node: RaftNode, *, every_ms: int = 0) -> None:
        """Judge leader `nid` now (after its own steps, at most once per `every_ms`)."""
        w = self.world
        now = w.now
        if every_ms and now - self.last_check.get(nid, -every_ms) < every_ms:
            return
        self.last_check[nid] = now
        paused = w.paused_until[nid]
        st = node.state
        if paused > now or not isinstance(st, LeaderState):
            return
        key = (nid, st.epoch)
        heard = self._heard(nid, node)
        if len(heard) + node.is_voter >= node.voters.majority:
            self.cut.pop(key, None)
            return
        deadline = st.check_quorum_deadline_ms
        rec = self.cut.get(key)
        if rec is None or rec[0] < paused or self.heard.get(key) != heard:
            # Cut off now, or it was paused since, or other voters reach it now (their
            # fetches may complete a window together with fetches from before): start over.
            if rec is None:
                w.reach.moment("leader-cut-off")
            self.cut[key] = [max(now, paused), deadline, 0]
            self.heard[key] = heard
            return
        since = rec[0]
        if deadline != rec[1]:
            rec[1] = deadline
            if now > since + self.in_flight_ms:
                rec[2] += 1
        late = now > deadline + SLACK_MS
        if rec[2] > 1 or late:
            why = "is past its check-quorum deadline" if late else "restarted its window twice"
            w.checker.fail(
                "leader-resigns-in-time",
                f"leader {nid} of epoch {key[1]} {why} {now - since} ms after it was cut off "
                f"from a majority of voters {node.voters.sorted_ids()}",
            )
            self.cut[key] = [now, deadline, 0]  # one report per cut-off

    def _heard(self, leader: int, node: RaftNode) -> frozenset[int]:
        """The other voters (of the leader's newest set) whose fetches can reach it now."""
        w = self.world
        voters = node.voters
        blocked = w.net.blocked
        nodes = w.nodes
        paused = w.paused_until
        now = w.now
        directory = w.membership.directory_ids
        keyed = {n.key.id: n.key.directory_id for n in voters.nodes}
        return frozenset(
            i
            for i in voters.voter_ids
            if i != leader
            and nodes[i] is not None
            and paused[i] <= now
            and (i, leader) not in blocked  # its fetches arrive (answers may not: still counted)
            and keyed.get(i) in (None, directory[i])
        )

"""The leader's read lease: may a (deposed but unaware) leader still answer a consumer read?

Role: a consumer Fetch is refused at once by a leader without its lease (metaquorum's own
client path; Kafka's KRaft has no such read); the read index then confirms what is answered. A
leader cut off from the others keeps believing it leads until check-quorum resigns it (1.5 x
fetch.timeout.ms), while the others may elect a successor after fetch.timeout.ms and commit
writes: without a lease the old leader would answer reads that miss acknowledged writes (stale
reads, not linearizable). The lease holds while a majority of voters (the leader counting for
itself) received a successful Fetch response from this leader that was sent within
`LEASE_FRACTION x fetch.timeout.ms` (received: the voter fetched again after it).

Why it was taken as safe (KIP-595, Kafka 4.3 `FollowerState.canGrantVote`): a follower restarts
its fetch timer when it receives a successful response, and grants no pre-vote while that timer
runs; the leader grants none. A response sent at t is received after t, so that voter pre-votes
for nobody before t + fetch.timeout.ms, and any new majority intersects the fresh one in such a
voter or in the leader (but see hole 1 below). (The time a fetch *arrived* is not enough: a
parked fetch answered after a partition may never reach the follower, whose timer then runs
from an older response; the first integration run of this lease showed exactly that.) The
fraction leaves room for clock-rate drift between hosts (the same assumption as etcd's lease-
based reads; clocks are not compared, only durations).
What "received" means: a voter's Fetch proves the response before it only when both went over
the same inbound connection (the request's `source`; high_watermark.fetch_arrived) and that
connection carries one request at a time (Kafka's raft client: max.in.flight = 1; ours:
runtime/peers.py), so the Fetch was sent after the response arrived. A Fetch on another
connection proves nothing: the voter may have given up on the old one (a timeout, a state
change) before the response came, and the core ignores a response it gave up on; our peers
close the connection of every request the core abandons (core/request_manager.on_abandon), so
an ignored response never precedes a later request on one connection. CI's nemesis found both
gaps at once (2026-11-29, seed 303): a leader paused 3.2 s woke, answered a Fetch parked
before the pause, then took that voter's next Fetch (sent behind it on the same connection
after a state change, while the voter was already voting for a successor) as proof, and
answered reads for 35 ms that missed the new leader's commits.
Holes left, why consumer reads also wait for the read index (core/read_index.py), which
needs no timer: (1) a voter grants a standard vote of a higher epoch while its fetch timer
runs (Kafka 4.3's KafkaRaftClient.handleVoteRequest transitions to Unattached first), so a
pre-vote it granted before fetching again can still elect a successor inside the lease; (2) a
Kafka voter that gave up on a Fetch after a state change keeps its connection (it ignores the
late response) and sends its next Fetch behind it, so a response it ignored is counted. The
lease remains the fast refusal of a leader that cannot be sure it still leads.
Invariant: pure (times come in as arguments); a one-voter quorum always holds its lease.
"""

from __future__ import annotations

from collections.abc import Mapping

from metaquorum.core.high_watermark import ReplicaProgress

LEASE_FRACTION = 0.75


def read_lease_end_ms(
    local_id: int, voters: Mapping[int, ReplicaProgress], fetch_timeout_ms: int
) -> int | None:
    """Until when this leader may answer reads (None: never; a one-voter quorum: forever)."""
    others = sorted(
        (
            s.received_response_ms
            for v, s in voters.items()
            if v != local_id and s.received_response_ms >= 0
        ),
        reverse=True,
    )
    needed = len(voters) // 2  # other voters that, with the leader, make a majority
    if needed == 0:
        return 2**62
    if len(others) < needed:
        return None
    return others[needed - 1] + int(fetch_timeout_ms * LEASE_FRACTION)


def holds_read_lease(
    local_id: int, voters: Mapping[int, ReplicaProgress], fetch_timeout_ms: int, now_ms: int
) -> bool:
    end = read_lease_end_ms(local_id, voters, fetch_timeout_ms)
    return end is not None and now_ms < end

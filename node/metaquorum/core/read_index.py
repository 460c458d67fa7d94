"""The read index: has a majority confirmed, after a consumer read arrived, that this leader
still leads? (metaquorum's own client path; Raft dissertation §6.4; etcd's ReadIndex.)

Role: a consumer read on the leader notes `LeaderProgress.responses_sent` (the sequence number
of the last successful Fetch response sent to a voter in this term), posts `ConfirmReads` (the
voters' parked fetches are answered at once) and is answered only once a majority of voters,
the leader counting for itself, sent a Fetch of this epoch after receiving a response numbered
above it. Such a voter was in this epoch after the read arrived, so it had voted for no later
epoch before then; any majority that elected a successor intersects this one, so none existed
when the read arrived, and the leader's high watermark then held every committed offset.
Unlike the read lease (core/read_lease.py, still checked first to refuse a deposed leader
fast) this needs no clock and no assumption about when voters grant votes: a voter's Fetch
proves its epoch, not its timer. Kafka 4.3 grants a standard vote of a higher epoch even while
its fetch timer runs (KafkaRaftClient.handleVoteRequest transitions to Unattached first), so a
pre-vote granted before a voter fetched again can still elect a successor inside a lease.
"Received" is as for the lease: the next Fetch on the same inbound connection, one request in
flight per connection (high_watermark.fetch_arrived; runtime/peers.py).
Invariants: pure but for `handle_confirm_reads`, which only answers parked fetches early (an
empty or data answer a follower may always get); a one-voter quorum confirms at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from metaquorum.core.context import RaftContext
from metaquorum.core.events import ConfirmReads
from metaquorum.core.fetch import complete_parked_fetch
from metaquorum.core.high_watermark import ReplicaProgress
from metaquorum.core.states import LeaderState


def reads_confirmed_after(local_id: int, voters: Mapping[int, ReplicaProgress], seq: int) -> bool:
    """A majority of `voters` (the leader counting for itself) confirmed after response `seq`."""
    confirmed = sum(1 for v, s in voters.items() if v == local_id or s.received_response_seq > seq)
    return confirmed > len(voters) // 2


def handle_confirm_reads(ctx: RaftContext, event: ConfirmReads) -> None:
    """Answer every parked fetch now: the voters fetch again at once, confirming or not."""
    st = ctx.state
    if not isinstance(st, LeaderState):
        return
    for parked in st.data.purgatory.drain():  # the purgatory is empty after: nothing to redo
        complete_parked_fetch(ctx, parked)

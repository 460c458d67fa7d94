"""The simulated state machine's snapshot of the committed prefix (KIP-630, KIP-853).

Role: the bytes a replica writes when it snapshots below `end`, as a Kafka snapshot file: the
header batch (with the KRaftVersion and Voters records as of the prefix's end once its
kraft.version is >= 1), one data batch of `offset:epoch:value` records, the footer.
The membership in the header comes from `membership` when given: the simulator passes what the
snapshotting replica's core chooses (`core/snapshot_membership.py`, the function the runtime's
`SnapshotPolicy` runs); without it, from a scan of the committed prefix, which is the oracle
`snapshot-consistent` compares every written and installed snapshot with.
Invariant: for a correct replica, a function of the committed prefix only, so every replica's
snapshot at the same end is the same bytes. The data batch of a prefix is encoded once per
simulation (`cache`, the checker's): the committed log only grows, so the prefix below `end`
never changes once committed, and every replica's snapshot and every check at that end reuse it.
"""

from __future__ import annotations

from metaquorum.core.log import EntryKind, LogEntry
from metaquorum.protocol.control_records import snapshot_footer_batch, snapshot_header_batch
from metaquorum.protocol.messages import KRaftVersionRecord, VotersRecord
from metaquorum.protocol.records import SimpleRecord, build_batch


def committed_snapshot(
    committed: list[LogEntry],
    end: int,
    membership: tuple[int, VotersRecord | None] | None = None,
    cache: dict[tuple[int, int], bytes] | None = None,
) -> bytes | None:
    """The simulated state machine's snapshot of the committed prefix below `end`, as a
    Kafka snapshot file: header batch (with the KRaftVersion and Voters records as of the
    prefix's end when its kraft.version is >= 1), one data batch of `offset:epoch:value`
    records, footer. Depends on the committed prefix only, so every replica's agrees."""
    if end > len(committed) or end <= 0:
        return None
    prefix = committed[:end]
    kraft, voters = 0, None
    if membership is not None:
        kraft, voters = membership
    else:
        for e in prefix:
            if e.kind is EntryKind.KRAFT_VERSION and isinstance(e.control, KRaftVersionRecord):
                kraft = e.control.kraft_version
            elif e.kind is EntryKind.KRAFT_VOTERS and isinstance(e.control, VotersRecord):
                voters = e.control
    epoch = prefix[-1].epoch
    header = snapshot_header_batch(
        epoch, 0, timestamp_ms=0, kraft_version=kraft, voters=voters if kraft else None
    )
    first = 1 + (kraft >= 1) + (kraft >= 1 and voters is not None)
    data = None if cache is None else cache.get((end, first))
    if data is None:
        values = [SimpleRecord(b"%d:%d:%s" % (e.offset, e.epoch, e.value)) for e in prefix]
        data = build_batch(first, epoch, values, timestamp_ms=0)
        if cache is not None:
            cache[(end, first)] = data
    return header + data + snapshot_footer_batch(first + end, epoch, timestamp_ms=0)

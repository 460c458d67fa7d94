"""Between the core's `LogEntry`s and Kafka's record batches (reference §3; KIP-595 §Fetch).

Role: the core never sees bytes. The runtime turns a received `records` field into entries for
`ResponseReceived`, keeps those bytes so the follower stores exactly what the leader sent, turns
the entries of an `AppendEntries` effect into batches for storage, and serves a Fetch from the
leader's stored batches (bytes as on disk, as Kafka does).

Invariants: a data record's value is the entry's value (key null); a LeaderChange control batch
is an entry of kind LEADER_CHANGE whose value is `core.leader_change.LeaderChangeValue` (leader,
all voters, granting voters: the core fills them, the runtime patches nothing in); offsets and
epochs are taken from the batches; batches that fail their CRC are refused (ProtocolError).
"""

from __future__ import annotations

from collections.abc import Sequence

from metaquorum.core.leader_change import LeaderChangeValue
from metaquorum.core.log import EntryKind, LogEntry
from metaquorum.protocol.control_records import (
    ControlRecordType,
    control_records_of,
    leader_change_batch,
)
from metaquorum.protocol.messages import LeaderChangeMessage
from metaquorum.protocol.records import build_batch, iter_batches


def entries_from_records(data: bytes | None, from_offset: int) -> tuple[LogEntry, ...]:
    """Entries at or after `from_offset` in a Fetch response's records (a partial last batch,
    as a size-capped fetch may end with, is ignored)."""
    if not data:
        return ()
    out: list[LogEntry] = []
    for batch in iter_batches(data):
        batch.ensure_valid()
        epoch = batch.partition_leader_epoch
        if batch.is_control:
            # One core entry per control record; the core only models LeaderChange.
            for i, (rtype, message) in enumerate(control_records_of(batch)):
                value = b""
                if rtype == ControlRecordType.LEADER_CHANGE and isinstance(
                    message, LeaderChangeMessage
                ):
                    value = LeaderChangeValue.of(
                        message.leader_id,
                        (v.voter_id for v in message.voters),
                        (v.voter_id for v in message.granting_voters),
                    ).encode()
                offset = batch.base_offset + i
                if offset >= from_offset:
                    out.append(LogEntry(offset, epoch, value, EntryKind.LEADER_CHANGE))
            continue
        for record in batch:
            if record.offset >= from_offset:
                out.append(LogEntry(record.offset, epoch, record.value or b""))
    return tuple(out)


def batches_for_entries(
    entries: Sequence[LogEntry],
    *,
    leader_id: int = -1,
    timestamp_ms: int,
) -> list[bytes]:
    """Encode entries (dense offsets) as v2 batches: runs of data entries of one epoch become
    one batch; each LeaderChange entry its own control batch with the leader, the voters and
    the granting voters the core put in the entry's value (`LeaderChangeValue`); `leader_id`
    and the granting voters stand in for a legacy value that names neither leader nor voters."""
    out: list[bytes] = []
    run: list[LogEntry] = []

    def flush_run() -> None:
        if run:
            out.append(
                build_batch(
                    run[0].offset, run[0].epoch, [e.value for e in run], timestamp_ms=timestamp_ms
                )
            )
            run.clear()

    for entry in entries:
        if entry.kind is EntryKind.LEADER_CHANGE:
            flush_run()
            lc = LeaderChangeValue.decode(entry.value)
            granting = [LeaderChangeMessage.Voter(voter_id=v) for v in lc.granting_voters]
            everyone = [LeaderChangeMessage.Voter(voter_id=v) for v in lc.voters] or granting
            message = LeaderChangeMessage(
                version=0,
                leader_id=lc.leader_id if lc.leader_id >= 0 else leader_id,
                voters=everyone,
                granting_voters=granting,
            )
            out.append(
                leader_change_batch(entry.offset, entry.epoch, message, timestamp_ms=timestamp_ms)
            )
        else:
            if run and run[-1].epoch != entry.epoch:
                flush_run()
            run.append(entry)
    flush_run()
    return out


def clip_batches(data: bytes, first_offset: int, end_offset: int) -> bytes:
    """The whole batches of `data` whose base offset lies in [first_offset, end_offset)."""
    start = stop = -1
    for batch in iter_batches(data):
        if batch.base_offset < first_offset:
            continue
        if batch.base_offset >= end_offset:
            break
        if start < 0:
            start = batch.position
        stop = batch.position + batch.size_in_bytes
    return data[start:stop] if start >= 0 else b""

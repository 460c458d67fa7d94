"""Between the core's `LogEntry`s and Kafka's record batches (reference §3; KIP-595 §Fetch).

Role: the core never sees bytes. The runtime turns a received `records` field into entries for
`ResponseReceived`, keeps those bytes so the follower stores exactly what the leader sent, turns
the entries of an `AppendEntries` effect into batches for storage, and serves a Fetch from the
leader's stored batches (bytes as on disk, as Kafka does).

Invariants: a data record's value is the entry's value (key null); every control record is one
typed control entry (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters: the generated
record class; the core fills a LeaderChange itself, the runtime patches nothing in) and encodes
back to the same record; offsets and epochs are taken from the batches; batches that fail their
CRC are refused (ProtocolError).
"""

from __future__ import annotations

from collections.abc import Sequence

from metaquorum.core.log import EntryKind, LogEntry
from metaquorum.protocol.control_records import build_control_batch, control_records_of
from metaquorum.protocol.records import build_batch, iter_batches


def entries_from_records(data: bytes | None, from_offset: int) -> tuple[LogEntry, ...]:
    """Entries at or after `from_offset` in a Fetch response's records (a partial last batch,
    as a size-capped fetch may end with, is ignored). Every control record becomes a typed
    control entry (`LogEntry.control`), whatever its type."""
    if not data:
        return ()
    out: list[LogEntry] = []
    for batch in iter_batches(data):
        batch.ensure_valid()
        epoch = batch.partition_leader_epoch
        if batch.is_control:
            for i, (record, (_, message)) in enumerate(
                zip(batch, control_records_of(batch), strict=True)
            ):
                offset = batch.base_offset + i
                if offset < from_offset:
                    continue
                if message is None:  # a type this version does not know: kept, never re-encoded
                    out.append(
                        LogEntry(offset, epoch, record.value or b"", EntryKind.UNKNOWN_CONTROL)
                    )
                else:
                    out.append(LogEntry.of_control(offset, epoch, message))
            continue
        for record in batch:
            if record.offset >= from_offset:
                out.append(LogEntry(record.offset, epoch, record.value or b""))
    return tuple(out)


def batches_for_entries(entries: Sequence[LogEntry], *, timestamp_ms: int) -> list[bytes]:
    """Encode entries (dense offsets) as v2 batches: each run of data entries of one epoch one
    data batch; each run of control entries of one epoch one control batch holding their typed
    records in order (Kafka writes LeaderChange [+ KRaftVersion + Voters] as one batch)."""
    out: list[bytes] = []
    run: list[LogEntry] = []

    def flush_run() -> None:
        if not run:
            return
        first = run[0]
        if first.is_control:
            messages = [e.control for e in run]
            if any(m is None for m in messages):
                raise ValueError(f"cannot re-encode an unknown control record at {first.offset}")
            out.append(
                build_control_batch(
                    first.offset,
                    first.epoch,
                    [m for m in messages if m is not None],
                    timestamp_ms=timestamp_ms,
                )
            )
        else:
            values = [e.value for e in run]
            out.append(build_batch(first.offset, first.epoch, values, timestamp_ms=timestamp_ms))
        run.clear()

    for entry in entries:
        if run and (run[-1].epoch != entry.epoch or run[-1].is_control != entry.is_control):
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

"""The default state machine of a node: a key-value map fed by the core's listener API, and its
snapshots in Kafka's snapshot file format (KIP-595 §State machine API, KIP-630).

Role: `handle_commit` applies committed data records in offset order. The core's log entries
carry a value only, so a record's key travels inside its value: `key=value` sets `key`
(last write wins) and `key=` (empty value) deletes it; a value without `=` is kept as a plain
record (counted, not mapped). `snapshot_payload` writes the map as a Kafka snapshot file:
SnapshotHeader control batch at offset 0, data batches whose records carry (key, value) as the
record's key and value, SnapshotFooter; `handle_load_snapshot` reads it back.

Invariants: the map is a pure function of the committed prefix (a snapshot + the records after
it); `applied_offset` is the end (exclusive) of what has been applied; the bytes counter that
triggers snapshots (`metadata.log.max.record.bytes.between.snapshots`) restarts at every
snapshot written or loaded.
"""

from __future__ import annotations

import hashlib

from metaquorum.core.listener import Batch, LeaderAndEpoch
from metaquorum.core.log import Snapshot
from metaquorum.protocol.control_records import snapshot_footer_batch, snapshot_header_batch
from metaquorum.protocol.messages import VotersRecord
from metaquorum.protocol.records import SimpleRecord, build_batch, iter_batches

RECORDS_PER_BATCH = 1000


class KeyValueStateMachine:
    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.applied_offset = 0
        self.records_applied = 0
        self.bytes_since_snapshot = 0
        self.leader: LeaderAndEpoch | None = None

    # --- RaftListener ------------------------------------------------------------------------
    def handle_commit(self, batch: Batch) -> None:
        self.applied_offset = batch.last_offset + 1
        if batch.control:
            return
        for value in batch.records:
            self.records_applied += 1
            self.bytes_since_snapshot += len(value)
            key, sep, val = value.partition(b"=")
            if not sep:
                continue
            if val:
                self.data[key] = val
            else:
                self.data.pop(key, None)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        data: dict[bytes, bytes] = {}
        for batch in iter_batches(snapshot.payload, allow_partial_tail=False):
            batch.ensure_valid()
            if batch.is_control:
                continue
            for record in batch:
                if record.key is not None and record.value is not None:
                    data[record.key] = record.value
        self.data = data
        self.applied_offset = snapshot.snapshot_id.offset
        self.bytes_since_snapshot = 0

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader

    # --- snapshots ---------------------------------------------------------------------------
    def snapshot_payload(
        self,
        epoch: int,
        timestamp_ms: int,
        kraft_version: int = 0,
        voters: VotersRecord | None = None,
    ) -> bytes:
        """The map as a Kafka snapshot file: the header batch (SnapshotHeader, and from
        kraft.version 1 the KRaftVersion and Voters records as of the snapshot's end, as
        Kafka's RecordsSnapshotWriter writes them), data batches, footer."""
        out = [
            snapshot_header_batch(
                epoch,
                timestamp_ms,
                timestamp_ms=timestamp_ms,
                kraft_version=kraft_version,
                voters=voters,
            )
        ]
        offset = 1 + (kraft_version >= 1) + (kraft_version >= 1 and voters is not None)
        items = sorted(self.data.items())
        for i in range(0, len(items), RECORDS_PER_BATCH):
            chunk = [SimpleRecord(v, k) for k, v in items[i : i + RECORDS_PER_BATCH]]
            out.append(build_batch(offset, epoch, chunk, timestamp_ms=timestamp_ms))
            offset += len(chunk)
        out.append(snapshot_footer_batch(offset, epoch, timestamp_ms=timestamp_ms))
        return b"".join(out)

    def snapshot_written(self) -> None:
        self.bytes_since_snapshot = 0

    def digest(self) -> str:
        h = hashlib.sha256()
        for k, v in sorted(self.data.items()):
            h.update(len(k).to_bytes(4, "big") + k + len(v).to_bytes(4, "big") + v)
        return h.hexdigest()[:16]

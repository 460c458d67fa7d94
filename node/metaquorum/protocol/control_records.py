"""KRaft control records: key, value and the control batches Kafka writes (reference §3.3, §3.4).

Role: encode and decode control records (key = {Version int16 0, Type int16}, value = the
message serialised at version 0) and build the control batches of Kafka's
`MemoryRecords.withLeaderChangeMessage` / `LeaderState.appendStartOfEpochControlRecords`
(LeaderChange, optionally KRaftVersion + KRaftVoters) and of `RecordsSnapshotWriter`
(SnapshotHeader [+ KRaftVersion + KRaftVoters] first, SnapshotFooter last).
KIP-595 (LeaderChange), KIP-630 (snapshot header/footer), KIP-853 (KRaftVersion, Voters).

Invariants: every control record value is written and read at version 0 (LeaderChangeMessage
included: its v1 VoterDirectoryId never reaches disk); control batches have the control flag,
CreateTime, no producer id/epoch/sequence, and every record carries the batch timestamp; a
malformed key or value raises ProtocolError, an unknown type decodes to UNKNOWN (ignored, as
Kafka ignores it).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from metaquorum.protocol.control_types import (
    MESSAGE_OF,
    TYPE_OF,
    ControlMessage,
    ControlRecordType,
)
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from metaquorum.protocol.records import Record, RecordBatch, SimpleRecord, build_batch, iter_batches

CURRENT_CONTROL_RECORD_KEY_VERSION = 0
CONTROL_VALUE_VERSION = 0  # every *_CURRENT_VERSION in Kafka's ControlRecordUtils
_KEY = struct.Struct(">hh")

_MESSAGE_OF = MESSAGE_OF
_TYPE_OF = TYPE_OF
# The names Kafka's DumpLogSegments prints before each decoded control record.
DUMP_NAMES: dict[ControlRecordType, str] = {
    ControlRecordType.LEADER_CHANGE: "LeaderChange",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


def control_record_key(record_type: ControlRecordType) -> bytes:
    return _KEY.pack(CURRENT_CONTROL_RECORD_KEY_VERSION, record_type)


def parse_control_record_type(key: bytes | None) -> ControlRecordType:
    """Kafka's ControlRecordType.parse: version int16 (>= 0), then the type id."""
    if key is None or len(key) < _KEY.size:
        raise ProtocolError(f"control record key of {0 if key is None else len(key)} bytes")
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise ProtocolError(f"control record key version {version} is negative")
    try:
        return ControlRecordType(type_id)
    except ValueError:
        return ControlRecordType.UNKNOWN


def control_record_type_of(message: ControlMessage) -> ControlRecordType:
    return _TYPE_OF[type(message)]


def control_record(message: ControlMessage, timestamp_ms: int | None = None) -> SimpleRecord:
    """The record (key + value at v0) Kafka's MemoryRecordsBuilder.append*Message writes."""
    key = control_record_key(control_record_type_of(message))
    return SimpleRecord(message.encode(CONTROL_VALUE_VERSION), key, (), timestamp_ms)


def decode_control_record(record: Record) -> tuple[ControlRecordType, ControlMessage | None]:
    """(type, message) of a control record; the message is None for ABORT/COMMIT/UNKNOWN."""
    record_type = parse_control_record_type(record.key)
    cls = _MESSAGE_OF.get(record_type)
    if cls is None:
        return record_type, None
    if record.value is None:
        raise ProtocolError(f"control record at offset {record.offset} has a null value")
    message: ControlMessage = cls.decode(record.value, CONTROL_VALUE_VERSION)
    return record_type, message


def build_control_batch(
    base_offset: int,
    partition_leader_epoch: int,
    messages: Sequence[ControlMessage],
    *,
    timestamp_ms: int,
) -> bytes:
    """One control batch holding `messages` in order, every record stamped `timestamp_ms`."""
    return build_batch(
        base_offset,
        partition_leader_epoch,
        [control_record(m) for m in messages],
        timestamp_ms=timestamp_ms,
        control=True,
    )


def leader_change_batch(
    base_offset: int,
    epoch: int,
    leader_change: LeaderChangeMessage,
    *,
    timestamp_ms: int,
    kraft_version: KRaftVersionRecord | None = None,
    voters: VotersRecord | None = None,
) -> bytes:
    """The leader's start-of-epoch batch: LeaderChange [+ KRaftVersion + Voters]."""
    messages: list[ControlMessage] = [leader_change]
    if kraft_version is not None:
        messages.append(kraft_version)
        if voters is not None:
            messages.append(voters)
    return build_control_batch(base_offset, epoch, messages, timestamp_ms=timestamp_ms)


def snapshot_header_batch(
    epoch: int,
    last_contained_log_timestamp: int,
    *,
    timestamp_ms: int,
    kraft_version: int = 0,
    voters: VotersRecord | None = None,
) -> bytes:
    """First batch of a snapshot, at offset 0 (RecordsSnapshotWriter.Builder.build)."""
    messages: list[ControlMessage] = [
        SnapshotHeaderRecord(version=0, last_contained_log_timestamp=last_contained_log_timestamp)
    ]
    if kraft_version >= 1:
        messages.append(KRaftVersionRecord(version=0, kraft_version=kraft_version))
        if voters is not None:
            messages.append(voters)
    return build_control_batch(0, epoch, messages, timestamp_ms=timestamp_ms)


def snapshot_footer_batch(base_offset: int, epoch: int, *, timestamp_ms: int) -> bytes:
    return build_control_batch(
        base_offset, epoch, [SnapshotFooterRecord(version=0)], timestamp_ms=timestamp_ms
    )


def control_records_of(batch: RecordBatch) -> list[tuple[ControlRecordType, ControlMessage | None]]:
    if not batch.is_control:
        raise ProtocolError(f"batch at offset {batch.base_offset} is not a control batch")
    return [decode_control_record(r) for r in batch]


def snapshot_control(payload: bytes) -> tuple[KRaftVersionRecord | None, VotersRecord | None]:
    """The KRaftVersion and Voters records of a snapshot (KIP-853: they follow the header in its
    leading control batch); reading stops at the first data batch."""
    kraft_version: KRaftVersionRecord | None = None
    voters: VotersRecord | None = None
    for batch in iter_batches(payload):
        if not batch.is_control:
            break
        for _, message in control_records_of(batch):
            if isinstance(message, KRaftVersionRecord):
                kraft_version = message
            elif isinstance(message, VotersRecord):
                voters = message
    return kraft_version, voters

"""The KRaft control record types and their value classes, with no codec attached (KIP-595,
KIP-630, KIP-853): Kafka's `ControlRecordType` ids and the generated record class of each.

Role: the one definition shared by `control_records` (the codec, which needs the batch and CRC
code) and the core's typed log entries (which must stay free of IO and CRC modules).
Invariant: `MESSAGE_OF` and `TYPE_OF` are inverse maps over the five KRaft control types.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from metaquorum.protocol.messages import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)

ControlMessage = (
    LeaderChangeMessage
    | SnapshotHeaderRecord
    | SnapshotFooterRecord
    | KRaftVersionRecord
    | VotersRecord
)


class ControlRecordType(IntEnum):
    """Kafka's ControlRecordType ids."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


MESSAGE_OF: dict[ControlRecordType, type[Any]] = {
    ControlRecordType.LEADER_CHANGE: LeaderChangeMessage,
    ControlRecordType.SNAPSHOT_HEADER: SnapshotHeaderRecord,
    ControlRecordType.SNAPSHOT_FOOTER: SnapshotFooterRecord,
    ControlRecordType.KRAFT_VERSION: KRaftVersionRecord,
    ControlRecordType.KRAFT_VOTERS: VotersRecord,
}
TYPE_OF: dict[type[Any], ControlRecordType] = {v: k for k, v in MESSAGE_OF.items()}

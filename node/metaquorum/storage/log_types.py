"""Value types of the metadata log's API: its configuration, errors and what appends, reads and
recovery return (see `metaquorum.storage.log`; KIP-595).

Invariants: all immutable except the recovery report, which recovery fills once at open.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from metaquorum.protocol.errors import ProtocolError

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"


class LogError(ProtocolError):
    """A log operation refused: bad batches from a leader, offsets out of order, bad range."""


class OffsetOutOfRangeError(LogError):
    pass


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30  # metadata.log.segment.bytes
    index_interval_bytes: int = 4096
    fsync: bool = True
    # Kafka truncates at the first bad batch wherever it is; we do so only for a torn tail
    # unless this is set (an operator's explicit choice to drop what follows the damage).
    truncate_corruption: bool = False


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    first_offset: int
    last_offset: int
    bytes_appended: int


@dataclass(frozen=True, slots=True)
class LogFetchInfo:
    """Bytes of whole batches starting with the one holding `start_offset`."""

    records: bytes
    start_offset: int


@dataclass(slots=True)
class RecoveryReport:
    truncated_bytes: int = 0
    reasons: list[str] = field(default_factory=list)
    rebuilt_indexes: list[Path] = field(default_factory=list)
    removed_files: list[Path] = field(default_factory=list)

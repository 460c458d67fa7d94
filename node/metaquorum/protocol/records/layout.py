"""RecordBatch v2 layout: field offsets, attribute bits, sentinels and header structs.

Role: the byte positions of Kafka's DefaultRecordBatch (reference §3.1), shared by the builder
and the reader. Invariant: these numbers are Kafka's and never change for magic 2.
"""

from __future__ import annotations

import struct
from enum import IntEnum

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET
LOG_OVERHEAD = 12  # BaseOffset + Length
MAGIC_VALUE_V2 = 2

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

# BaseOffset, Length, PartitionLeaderEpoch, Magic
BATCH_PREFIX = struct.Struct(">qiib")
# Attributes .. RecordsCount (the CRC'd header part)
BATCH_TAIL_HEADER = struct.Struct(">hiqqqhii")
UINT32 = struct.Struct(">I")
INT32 = struct.Struct(">i")


class CompressionType(IntEnum):
    """Attribute bits 0-2 (Kafka's CompressionType ids)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

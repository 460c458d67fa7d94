"""RecordBatch v2 (magic 2) and Record codec, as Kafka's DefaultRecordBatch / DefaultRecord.

Modules: `layout` (offsets, flags), `varint` (ZigZag), `builder` (`build_batch`), `batch`
(`RecordBatch` view), `iteration` (walking buffers); everything is re-exported here.

Role: build record batches byte-for-byte as Kafka's raft BatchBuilder and MemoryRecordsBuilder
do, and read batches out of any buffer (a fetch response, a segment file, a snapshot) without
copying it: `iter_batches` yields `RecordBatch` views over `memoryview` slices and a batch's
records are decoded lazily, one at a time, when iterated.

Layout (reference §3.1, §3.2; KIP-98 message format v2):
    batch:  BaseOffset int64 | Length int32 | PartitionLeaderEpoch int32 | Magic int8 (=2)
            | CRC uint32 | Attributes int16 | LastOffsetDelta int32 | BaseTimestamp int64
            | MaxTimestamp int64 | ProducerId int64 | ProducerEpoch int16 | BaseSequence int32
            | RecordsCount int32 | Records...
    record: Length varint | Attributes int8 | TimestampDelta varlong | OffsetDelta varint
            | KeyLength varint | Key | ValueLength varint | Value | HeadersCount varint
            | Headers (KeyLength varint, Key utf-8, ValueLength varint, Value)...

Invariants:
- the CRC is CRC-32C over [Attributes, end of batch); PartitionLeaderEpoch is outside it, so
  a leader may stamp its epoch on a batch without recomputing the CRC;
- Length = batch size - 12; a batch is never shorter than RECORD_BATCH_OVERHEAD (61 bytes);
- lengths and deltas inside a record are signed ZigZag varints, -1 meaning null;
- every decoding failure (truncated, bad magic, bad length, CRC mismatch, bad varint, records
  that do not fill the batch exactly, compressed data we cannot read) raises `ProtocolError`.
"""

from __future__ import annotations

from metaquorum.protocol.records.batch import (
    RecordBatch as RecordBatch,
)
from metaquorum.protocol.records.batch import (
    _small_varint as _small_varint,
)
from metaquorum.protocol.records.builder import (
    Header as Header,
)
from metaquorum.protocol.records.builder import (
    Record as Record,
)
from metaquorum.protocol.records.builder import (
    SimpleRecord as SimpleRecord,
)
from metaquorum.protocol.records.builder import (
    build_batch as build_batch,
)
from metaquorum.protocol.records.iteration import (
    batch_size_at as batch_size_at,
)
from metaquorum.protocol.records.iteration import (
    iter_batches as iter_batches,
)
from metaquorum.protocol.records.iteration import (
    iter_valid_batches as iter_valid_batches,
)
from metaquorum.protocol.records.iteration import (
    records_of as records_of,
)
from metaquorum.protocol.records.iteration import (
    valid_prefix as valid_prefix,
)
from metaquorum.protocol.records.layout import (
    ATTRIBUTES_OFFSET as ATTRIBUTES_OFFSET,
)
from metaquorum.protocol.records.layout import (
    BASE_OFFSET_OFFSET as BASE_OFFSET_OFFSET,
)
from metaquorum.protocol.records.layout import (
    BASE_SEQUENCE_OFFSET as BASE_SEQUENCE_OFFSET,
)
from metaquorum.protocol.records.layout import (
    BASE_TIMESTAMP_OFFSET as BASE_TIMESTAMP_OFFSET,
)
from metaquorum.protocol.records.layout import (
    BATCH_PREFIX as BATCH_PREFIX,
)
from metaquorum.protocol.records.layout import (
    BATCH_TAIL_HEADER as BATCH_TAIL_HEADER,
)
from metaquorum.protocol.records.layout import (
    COMPRESSION_CODEC_MASK as COMPRESSION_CODEC_MASK,
)
from metaquorum.protocol.records.layout import (
    CONTROL_FLAG_MASK as CONTROL_FLAG_MASK,
)
from metaquorum.protocol.records.layout import (
    CRC_OFFSET as CRC_OFFSET,
)
from metaquorum.protocol.records.layout import (
    DELETE_HORIZON_FLAG_MASK as DELETE_HORIZON_FLAG_MASK,
)
from metaquorum.protocol.records.layout import (
    INT32 as INT32,
)
from metaquorum.protocol.records.layout import (
    LAST_OFFSET_DELTA_OFFSET as LAST_OFFSET_DELTA_OFFSET,
)
from metaquorum.protocol.records.layout import (
    LENGTH_OFFSET as LENGTH_OFFSET,
)
from metaquorum.protocol.records.layout import (
    LOG_OVERHEAD as LOG_OVERHEAD,
)
from metaquorum.protocol.records.layout import (
    MAGIC_OFFSET as MAGIC_OFFSET,
)
from metaquorum.protocol.records.layout import (
    MAGIC_VALUE_V2 as MAGIC_VALUE_V2,
)
from metaquorum.protocol.records.layout import (
    MAX_TIMESTAMP_OFFSET as MAX_TIMESTAMP_OFFSET,
)
from metaquorum.protocol.records.layout import (
    NO_PRODUCER_EPOCH as NO_PRODUCER_EPOCH,
)
from metaquorum.protocol.records.layout import (
    NO_PRODUCER_ID as NO_PRODUCER_ID,
)
from metaquorum.protocol.records.layout import (
    NO_SEQUENCE as NO_SEQUENCE,
)
from metaquorum.protocol.records.layout import (
    NO_TIMESTAMP as NO_TIMESTAMP,
)
from metaquorum.protocol.records.layout import (
    PARTITION_LEADER_EPOCH_OFFSET as PARTITION_LEADER_EPOCH_OFFSET,
)
from metaquorum.protocol.records.layout import (
    PRODUCER_EPOCH_OFFSET as PRODUCER_EPOCH_OFFSET,
)
from metaquorum.protocol.records.layout import (
    PRODUCER_ID_OFFSET as PRODUCER_ID_OFFSET,
)
from metaquorum.protocol.records.layout import (
    RECORD_BATCH_OVERHEAD as RECORD_BATCH_OVERHEAD,
)
from metaquorum.protocol.records.layout import (
    RECORDS_COUNT_OFFSET as RECORDS_COUNT_OFFSET,
)
from metaquorum.protocol.records.layout import (
    RECORDS_OFFSET as RECORDS_OFFSET,
)
from metaquorum.protocol.records.layout import (
    TIMESTAMP_TYPE_MASK as TIMESTAMP_TYPE_MASK,
)
from metaquorum.protocol.records.layout import (
    TRANSACTIONAL_FLAG_MASK as TRANSACTIONAL_FLAG_MASK,
)
from metaquorum.protocol.records.layout import (
    UINT32 as UINT32,
)
from metaquorum.protocol.records.layout import (
    CompressionType as CompressionType,
)
from metaquorum.protocol.records.varint import (
    read_varint as read_varint,
)
from metaquorum.protocol.records.varint import (
    read_varlong as read_varlong,
)
from metaquorum.protocol.records.varint import (
    size_of_varint as size_of_varint,
)
from metaquorum.protocol.records.varint import (
    size_of_varlong as size_of_varlong,
)
from metaquorum.protocol.records.varint import (
    write_varint as write_varint,
)
from metaquorum.protocol.records.varint import (
    write_varlong as write_varlong,
)

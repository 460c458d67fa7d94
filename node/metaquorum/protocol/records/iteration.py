"""Walking a buffer of concatenated v2 batches (fetch responses, segments, snapshots).

Role: find batch boundaries, iterate batch views without copying, compute the valid prefix of
a possibly torn buffer. Invariant: a batch is yielded only once its whole length is present.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.records.batch import RecordBatch
from metaquorum.protocol.records.builder import Record
from metaquorum.protocol.records.layout import (
    INT32,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
)


def batch_size_at(buf: memoryview | bytes, pos: int = 0) -> int | None:
    """Size of the batch starting at `pos` from its length field, or None if the 12-byte
    prefix is not whole. Raises ProtocolError when the length is below the v2 header size."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    length: int = INT32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
    if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
        raise ProtocolError(f"record batch at byte {pos}: length field {length} is too small")
    return length + LOG_OVERHEAD


def iter_batches(
    buf: bytes | bytearray | memoryview, *, allow_partial_tail: bool = True
) -> Iterator[RecordBatch]:
    """Yield each batch in `buf` as a view, in order, without copying.

    A trailing partial batch (as a size-capped fetch response may end with) is skipped when
    `allow_partial_tail`, otherwise it raises. The CRC is not checked here: call
    `ensure_valid()` on each batch (or use `iter_valid_batches`).
    """
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    pos = 0
    total = len(mv)
    while pos < total:
        size = batch_size_at(mv, pos)
        if size is None or pos + size > total:
            if allow_partial_tail:
                return
            raise ProtocolError(
                f"truncated record batch at byte {pos}: {total - pos} bytes of "
                f"{'?' if size is None else size}"
            )
        yield RecordBatch(mv[pos : pos + size], pos)
        pos += size


def iter_valid_batches(buf: bytes | bytearray | memoryview) -> Iterator[RecordBatch]:
    """`iter_batches` with every batch's CRC checked (ProtocolError on the first bad one)."""
    for batch in iter_batches(buf):
        batch.ensure_valid()
        yield batch


def valid_prefix(
    buf: bytes | bytearray | memoryview, *, first_offset: int | None = None, min_epoch: int = -1
) -> tuple[int, list[RecordBatch], str]:
    """Longest prefix of whole, CRC-valid batches with dense offsets and non-decreasing epochs.

    `first_offset`, when given, is the base offset the first batch must have, and `min_epoch`
    the smallest epoch it may carry (for a scan resumed chunk by chunk). Returns (bytes,
    batches, the reason the scan stopped: "" if it reached the end). Used by recovery:
    everything after the prefix is a torn or corrupt tail. (BaseOffset and
    PartitionLeaderEpoch are outside the CRC, hence the offset and epoch checks.)
    """
    mv = memoryview(buf)
    pos = 0
    batches: list[RecordBatch] = []
    next_offset = first_offset
    epoch = min_epoch
    while pos < len(mv):
        try:
            size = batch_size_at(mv, pos)
            if size is None or pos + size > len(mv):
                return pos, batches, f"truncated batch at byte {pos}"
            batch = RecordBatch(mv[pos : pos + size], pos)
        except ProtocolError as e:
            return pos, batches, str(e)
        if not batch.is_valid():
            return pos, batches, f"CRC mismatch in batch at byte {pos}"
        if batch.last_offset_delta < 0 or (
            next_offset is not None and batch.base_offset != next_offset
        ):
            return (
                pos,
                batches,
                (
                    f"batch at byte {pos} has base offset {batch.base_offset}, "
                    f"expected {next_offset}"
                ),
            )
        if batch.partition_leader_epoch < epoch:
            return (
                pos,
                batches,
                f"batch at byte {pos}: epoch {batch.partition_leader_epoch} < {epoch}",
            )
        batches.append(batch)
        next_offset = batch.next_offset
        epoch = batch.partition_leader_epoch
        pos += size
    return pos, batches, ""


def records_of(batches: Iterable[RecordBatch]) -> Iterator[Record]:
    for batch in batches:
        yield from batch

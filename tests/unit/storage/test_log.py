"""The segmented metadata log against a naive in-memory model: appends, reads, truncation,
rolls, reopen, epoch end offsets, snapshots moving the log start."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.protocol.records import build_batch, iter_valid_batches
from metaquorum.storage.log import LogConfig, LogError, MetadataLog, OffsetOutOfRangeError
from metaquorum.storage.snapshots import OffsetAndEpoch, RawSnapshotWriter

SMALL = LogConfig(segment_bytes=600, index_interval_bytes=150, fsync=False)


def _records(log: MetadataLog, start: int) -> list[tuple[int, int, bytes | None]]:
    out = []
    pos = start
    while pos < log.log_end_offset:
        data = log.read(pos, 1000).records
        batches = list(iter_valid_batches(data))
        assert batches, f"no batch at {pos}"
        for b in batches:
            for r in b:
                if r.offset >= pos:
                    out.append((r.offset, b.partition_leader_epoch, r.value))
            pos = b.next_offset
    return out


def _oracle_end_offset(model: list[tuple[int, int, bytes | None]], epoch: int, leo: int):
    # Definition: the end of epoch E is the first offset of a larger epoch; the epoch reported
    # is the largest epoch <= E present in the log.
    epochs = [e for _, e, _ in model]
    if not model or epoch < 0 or epoch > epochs[-1]:
        return None
    if epoch == epochs[-1]:
        return (leo, epoch)
    first_above = next(o for o, e, _ in model if e > epoch)
    below = [e for e in epochs if e <= epoch]
    return (first_above, below[-1] if below else epoch)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 6), st.integers(0, 2), st.integers(1, 60)),
        st.tuples(st.just("truncate"), st.integers(0, 60), st.just(0), st.just(0)),
        st.tuples(st.just("reopen"), st.just(0), st.just(0), st.just(0)),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_log_matches_model(operations: list[tuple[str, int, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "__cluster_metadata-0"
        log = MetadataLog.open(d, SMALL)
        model: list[tuple[int, int, bytes | None]] = []
        epoch = 1
        for op, a, b, c in operations:
            if op == "append":
                epoch += b
                values = [bytes([len(model) % 256]) * c for _ in range(a)]
                info = log.append_records_as_leader(values, epoch, timestamp_ms=7)
                assert info.first_offset == len(model)
                model += [(len(model) + i, epoch, v) for i, v in enumerate(values)]
            elif op == "truncate":
                end = log.truncate_to(a)
                if a < len(model):
                    # whole batches only: the batch holding `a` goes too
                    assert end <= a
                    model = model[:end]
                    assert _records(log, 0) == model
            else:
                log.flush()
                log.close()
                log = MetadataLog.open(d, SMALL)
                assert log.recovery.truncated_bytes == 0
            assert log.log_end_offset == len(model)
            if model:
                epoch = max(epoch, model[-1][1])
        assert _records(log, 0) == model
        for e in range(0, epoch + 2):
            want = _oracle_end_offset(model, e, len(model))
            if want is not None:
                assert tuple(log.end_offset_for_epoch(e)) == want
        log.close()


def test_roll_index_and_read(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path, SMALL)
    for i in range(40):
        log.append_records_as_leader([b"v" * 20] * 2, 1, timestamp_ms=i)
    assert len(log.segments) > 3
    assert all(s.size <= SMALL.segment_bytes for s in log.segments)
    assert any(s.index_path.stat().st_size > 0 for s in log.segments)
    for off in (0, 1, 37, 79):
        [first, *_] = iter_valid_batches(log.read(off, 1).records)
        assert first.base_offset <= off <= first.last_offset  # min one batch
    with pytest.raises(OffsetOutOfRangeError):
        log.read(81, 100)
    assert log.read(80, 100).records == b""
    log.close()


def test_append_as_follower_validates(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path, SMALL)
    b0 = build_batch(0, 3, [b"a", b"b"], timestamp_ms=1)
    b2 = build_batch(2, 3, [b"c"], timestamp_ms=1)
    info = log.append_as_follower(b0 + b2[:-5])  # partial tail of a size-capped fetch
    assert (info.first_offset, info.last_offset) == (0, 1)
    with pytest.raises(LogError, match="expected 2"):
        log.append_as_follower(build_batch(5, 3, [b"x"], timestamp_ms=1))
    with pytest.raises(LogError, match="below the log's last epoch"):
        log.append_as_follower(build_batch(2, 2, [b"x"], timestamp_ms=1))
    bad = bytearray(b2)
    bad[-1] ^= 1
    with pytest.raises(LogError.__mro__[1], match="CRC"):
        log.append_as_follower(bytes(bad))
    assert log.log_end_offset == 2
    log.close()


def test_leader_append_stamps_offsets_and_epoch(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path, SMALL)
    log.append_records_as_leader([b"x"], 1, timestamp_ms=0)
    raw = build_batch(999, 0, [b"a"], timestamp_ms=0) + build_batch(
        5, 0, [b"b", b"c"], timestamp_ms=0
    )
    info = log.append_as_leader(raw, 4)
    assert (info.first_offset, info.last_offset) == (1, 3)
    got = list(iter_valid_batches(log.read(1, 10_000).records))
    assert [(b.base_offset, b.partition_leader_epoch) for b in got] == [(1, 4), (2, 4)]
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(1, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(1, 1)
    log.close()


def test_snapshot_moves_log_start(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path, SMALL)
    for i in range(30):
        log.append_records_as_leader([b"v" * 20] * 2, 1 + i // 10, timestamp_ms=i)
    log.flush()
    for sid in (OffsetAndEpoch(10, 1), OffsetAndEpoch(40, 2)):
        w = RawSnapshotWriter(tmp_path, sid, fsync=False)
        w.append(build_batch(0, sid.epoch, [b"s"], timestamp_ms=0))
        w.freeze()
        log.snapshot_frozen(sid)
    n_segments = len(log.segments)
    assert log.delete_before_snapshot(OffsetAndEpoch(40, 2))
    assert log.log_start_offset == 40 and len(log.segments) < n_segments
    assert log.segments[0].base_offset <= 40
    assert log.snapshots == [OffsetAndEpoch(40, 2)]
    assert not (tmp_path / "00000000000000000010-0000000001.checkpoint").exists()
    with pytest.raises(OffsetOutOfRangeError):
        log.read(39, 100)
    # Older than every epoch left in the log: (log start, the requested epoch), as Kafka does.
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(40, 1)
    log.close()
    again = MetadataLog.open(tmp_path, SMALL)
    assert (again.log_start_offset, again.log_end_offset) == (40, 60)
    assert again.epoch_cache.entries[0].start_offset == 40
    again.close()


def test_snapshot_past_log_end_truncates_fully(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path, SMALL)
    log.append_records_as_leader([b"a"], 1, timestamp_ms=0)
    log.close()
    w = RawSnapshotWriter(tmp_path, OffsetAndEpoch(100, 5), fsync=False)
    w.append(build_batch(0, 5, [b"s"], timestamp_ms=0))
    w.freeze()
    log = MetadataLog.open(tmp_path, SMALL)
    assert (log.log_start_offset, log.log_end_offset, log.last_fetched_epoch()) == (100, 100, 5)
    log.append_records_as_leader([b"b"], 6, timestamp_ms=0)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(100, 5)
    log.close()


def test_follower_installs_downloaded_snapshot(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path, SMALL)
    log.append_records_as_leader([b"a", b"b"], 1, timestamp_ms=0)
    assert not log.truncate_to_latest_snapshot()  # no snapshot yet
    # a snapshot of the leader's log at (50, 3), downloaded in unaligned pieces
    src = RawSnapshotWriter(tmp_path, OffsetAndEpoch(1, 1), fsync=False)
    src.append(build_batch(0, 1, [b"old"], timestamp_ms=0))
    src.freeze()
    log.snapshot_frozen(OffsetAndEpoch(1, 1))
    assert not log.truncate_to_latest_snapshot()  # behind the log: nothing to do
    body = build_batch(0, 3, [b"s1", b"s2"], timestamp_ms=0)
    w = RawSnapshotWriter(tmp_path, OffsetAndEpoch(50, 3), fsync=False)
    for i in range(0, len(body), 7):
        w.append(body[i : i + 7])
    w.freeze()
    log.snapshot_frozen(OffsetAndEpoch(50, 3))
    assert log.truncate_to_latest_snapshot()
    assert (log.log_start_offset, log.log_end_offset, log.last_fetched_epoch()) == (50, 50, 3)
    assert log.snapshots == [OffsetAndEpoch(50, 3)]
    assert sorted(p.name for p in tmp_path.glob("*.checkpoint")) == [
        "00000000000000000050-0000000003.checkpoint"
    ]
    log.append_as_follower(build_batch(50, 3, [b"next"], timestamp_ms=0))
    # older than every epoch in the log: (log start, requested epoch), as Kafka answers
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(50, 2)
    log.close()
    again = MetadataLog.open(tmp_path, SMALL)
    assert (again.log_start_offset, again.log_end_offset) == (50, 51)
    again.close()


def test_read_respects_max_bytes(tmp_path: Path) -> None:
    log = MetadataLog.open(tmp_path, LogConfig(segment_bytes=1 << 20, fsync=False))
    for i in range(12):
        log.append_records_as_leader([b"r" * (10 * i + 1)] * (1 + i % 3), 1, timestamp_ms=i)
    whole = log.read(0, 1 << 30).records
    batches = [
        (b.base_offset, b.last_offset, b.position, b.size_in_bytes)
        for b in iter_valid_batches(whole)
    ]
    for off in range(log.log_end_offset):
        first = next(i for i, b in enumerate(batches) if b[0] <= off <= b[1])
        for max_bytes in (0, 1, 60, 100, 150, 300, 700, 5000):
            # oracle: batches from `first` while the running total fits, at least one
            total, n = 0, 0
            for b in batches[first:]:
                if total + b[3] > max_bytes and n:
                    break
                total, n = total + b[3], n + 1
            start = batches[first][2]
            assert log.read(off, max_bytes).records == whole[start : start + total]
    log.close()

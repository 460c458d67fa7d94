"""Crash consistency: torn tails cut at every byte, bit flips, stale or missing indexes,
interrupted snapshots. After recovery the log holds exactly the whole valid batches before
the damage, and no byte that failed the check is ever read back."""

from __future__ import annotations

import os
import random
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.protocol.records import build_batch, iter_valid_batches, valid_prefix
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.segment import LogCorruptionError, LogSegment
from metaquorum.storage.snapshots import OffsetAndEpoch, RawSnapshotWriter, list_snapshots

CFG = LogConfig(segment_bytes=1 << 20, index_interval_bytes=100, fsync=False)


def _build(directory: Path, batches: int = 6) -> list[int]:
    """A log of `batches` batches; returns each batch's end byte position in the .log file."""
    log = MetadataLog.open(directory, CFG)
    ends = []
    for i in range(batches):
        log.append_records_as_leader([b"r%d" % i] * (i + 1), 1 + i // 3, timestamp_ms=i)
        ends.append(log.segments[-1].size)
    log.close()
    return ends


def _offsets(log: MetadataLog) -> list[int]:
    if log.log_end_offset == log.log_start_offset:
        return []
    data = log.read(log.log_start_offset, 1 << 30).records
    return [r.offset for b in iter_valid_batches(data) for r in b]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    d = tmp_path_factory.mktemp("pristine") / "__cluster_metadata-0"
    return d, _build(d)


def test_cut_at_every_byte_of_last_batch(tmp_path: Path, pristine: tuple[Path, list[int]]) -> None:
    src, ends = pristine
    whole_before = ends[-2]
    expected_leo = sum(range(1, len(ends)))  # records of every batch but the last
    d = tmp_path / "cut"
    shutil.copytree(src, d)
    originals = {p.name: p.read_bytes() for p in src.iterdir()}
    seg = "00000000000000000000.log"
    for cut in range(whole_before, ends[-1]):
        for name, data in originals.items():  # restore the crashed state: log cut at `cut`
            (d / name).write_bytes(data[:cut] if name == seg else data)
        log = MetadataLog.open(d, CFG)
        assert log.log_end_offset == expected_leo, cut
        assert log.recovery.truncated_bytes == cut - whole_before
        assert log.segments[-1].size == whole_before
        assert _offsets(log) == list(range(expected_leo))
        # the log keeps working after recovery
        log.append_records_as_leader([b"new"], 9, timestamp_ms=0)
        assert log.log_end_offset == expected_leo + 1
        log.close()
        for extra in set(p.name for p in d.iterdir()) - set(originals):
            (d / extra).unlink()


def test_bit_flips_in_last_batch(tmp_path: Path, pristine: tuple[Path, list[int]]) -> None:
    src, ends = pristine
    rng = random.Random(7)
    expected_leo = sum(range(1, len(ends)))
    positions = sorted(rng.sample(range(ends[-2], ends[-1]), 40))
    for pos in positions:
        d = tmp_path / f"flip{pos}"
        shutil.copytree(src, d)
        path = d / "00000000000000000000.log"
        data = bytearray(path.read_bytes())
        data[pos] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        log = MetadataLog.open(d, CFG)
        # PartitionLeaderEpoch is outside the CRC: a flip that raises it cannot be detected
        # (nor can Kafka); everything else, base offset included, cuts the batch.
        rel = pos - ends[-2]
        if 12 <= rel < 16:
            assert log.log_end_offset in (expected_leo, expected_leo + len(ends))
        else:
            assert log.log_end_offset == expected_leo, pos
            assert log.recovery.reasons
        for b in iter_valid_batches(log.read(0, 1 << 30).records):
            assert b.is_valid()
        log.close()
        shutil.rmtree(d)


def test_corruption_in_middle_is_refused_not_truncated(
    tmp_path: Path, pristine: tuple[Path, list[int]]
) -> None:
    src, ends = pristine
    d = tmp_path / "mid"
    shutil.copytree(src, d)
    path = d / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    data[ends[1] + 30] ^= 0xFF  # inside batch 2; batches 3.. are intact
    path.write_bytes(bytes(data))
    with pytest.raises(LogCorruptionError) as info:
        MetadataLog.open(d, CFG)
    msg = str(info.value)
    assert "00000000000000000000.log" in msg and f"at byte {ends[1]}" in msg
    assert f"valid batch follows at byte {ends[2]}" in msg
    assert path.read_bytes() == bytes(data)  # nothing was changed
    # The operator may choose Kafka's behaviour explicitly: truncate at the damage.
    log = MetadataLog.open(d, replace(CFG, truncate_corruption=True))
    assert log.log_end_offset == 3  # batches 0 (1 record) and 1 (2 records)
    [reason] = log.recovery.reasons
    assert "CRC" in reason and f"at byte {ends[1]}" in reason
    assert [e.epoch for e in log.epoch_cache.entries] == [1]
    log.close()


def _segmented(directory: Path) -> list[Path]:
    log = MetadataLog.open(directory, replace(CFG, segment_bytes=300))
    for i in range(12):
        log.append_records_as_leader([b"x" * 30], 1, timestamp_ms=i)
    log.close()
    segs = sorted(directory.glob("*.log"))
    assert len(segs) >= 3
    return segs


def test_damage_in_older_segment_is_refused(tmp_path: Path) -> None:
    segs = _segmented(tmp_path)
    with open(segs[0], "r+b") as f:
        f.truncate(segs[0].stat().st_size - 5)
    with pytest.raises(LogCorruptionError, match=re.escape(segs[0].name)):
        MetadataLog.open(tmp_path, CFG)
    assert all(p.exists() for p in segs)


def test_missing_segment_is_refused(tmp_path: Path) -> None:
    segs = _segmented(tmp_path)
    segs[1].unlink()
    with pytest.raises(LogCorruptionError, match="missing segment"):
        MetadataLog.open(tmp_path, CFG)
    assert segs[2].exists()


@pytest.mark.parametrize("damage", ["missing", "empty", "garbage", "stale", "odd-size"])
def test_index_rebuilt(tmp_path: Path, pristine: tuple[Path, list[int]], damage: str) -> None:
    src, _ = pristine
    d = tmp_path / damage
    shutil.copytree(src, d)
    index = d / "00000000000000000000.index"
    good = index.read_bytes()
    assert good  # the pristine log has index entries
    if damage == "missing":
        index.unlink()
    elif damage == "empty":
        index.write_bytes(b"")
    elif damage == "garbage":
        index.write_bytes(os.urandom(len(good)))
    elif damage == "stale":
        index.write_bytes(good[:-8])
    else:
        index.write_bytes(good + b"\x00")
    log = MetadataLog.open(d, CFG)
    assert index.read_bytes() == good
    assert log.recovery.rebuilt_indexes == [index]
    for off in range(log.log_end_offset):
        [b, *_] = iter_valid_batches(log.read(off, 1).records)
        assert b.base_offset <= off <= b.last_offset
    log.close()


def test_interrupted_snapshot_is_ignored_and_cleaned(tmp_path: Path) -> None:
    d = tmp_path / "__cluster_metadata-0"
    _build(d)
    w = RawSnapshotWriter(d, OffsetAndEpoch(5, 1), fsync=False)
    w.append(build_batch(0, 1, [b"half"], timestamp_ms=0)[:30])
    partial = w.temp_path
    # crash before freeze(): the temp file stays behind
    assert partial.exists() and partial.name.endswith(".checkpoint.part")
    (d / "00000000000000000003-0000000001.checkpoint.deleted").write_bytes(b"x")
    log = MetadataLog.open(d, CFG)
    assert not partial.exists()
    assert log.snapshots == [] and list_snapshots(d) == []
    assert partial in log.recovery.removed_files
    assert not list(d.glob("*.deleted"))
    log.close()


def test_foreign_files_do_not_break_open(tmp_path: Path) -> None:
    d = tmp_path / "p"
    _build(d, 2)
    (d / "notes.log").write_text("hello")  # not a segment name: ignored
    log = MetadataLog.open(d, CFG)
    assert log.log_end_offset == 3
    log.close()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 200), min_size=1, max_size=12),
    st.integers(0, 10_000),
    st.sampled_from(["none", "cut", "flip"]),
    st.sampled_from([61, 100, 257, 4096]),
)
def test_chunked_scan_equals_whole_scan(
    sizes: list[int], where: int, damage: str, chunk: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        data = bytearray()
        for i, n in enumerate(sizes):
            data += build_batch(i, 1 + i // 4, [b"v" * n], timestamp_ms=i)
        if damage == "cut":
            data = data[: where % (len(data) + 1)]
        elif damage == "flip":
            data[where % len(data)] ^= 0x55
        (d / "00000000000000000000.log").write_bytes(bytes(data))
        seg = LogSegment(d, 0, fsync=False)
        try:
            valid, infos, reason = seg._scan(chunk_bytes=chunk)
        finally:
            seg.close()
        want_valid, want_batches, want_reason = valid_prefix(bytes(data), first_offset=0)
        assert valid == want_valid
        assert [(i.position, i.base_offset, i.size) for i in infos] == [
            (b.position, b.base_offset, b.size_in_bytes) for b in want_batches
        ]
        assert bool(reason) == bool(want_reason)

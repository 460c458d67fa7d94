"""Kafka's DumpLogSegments (kafka-tools 4.3.1) reads our segments and snapshots: every batch
valid, and its output equals our `dump-log` output line for line (offsets, epochs, counts,
positions, CRCs, decoded control records)."""

from __future__ import annotations

from pathlib import Path

import pytest
from metaquorum.protocol.control_records import leader_change_batch
from metaquorum.protocol.messages import KRaftVersionRecord, LeaderChangeMessage
from metaquorum.protocol.records import Header, SimpleRecord, iter_batches
from metaquorum.protocol.types import Uuid
from metaquorum.storage.dump import dump_file
from metaquorum.storage.formatter import DynamicVoter, voters_record
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.snapshot_records import SnapshotWriter
from metaquorum.storage.snapshots import OffsetAndEpoch

from tests.conformance.conftest import run_kafka_class

pytestmark = pytest.mark.conformance

DUMP = "org.apache.kafka.tools.DumpLogSegments"


def _ours(files: list[Path], *, print_data: bool) -> list[str]:
    lines: list[str] = []
    for f in files:
        dump_file(f, deep_iteration=True, print_data=print_data, emit=lines.append)
    return lines


def _kafka(classpath: str, files: list[Path], *, print_data: bool) -> list[str]:
    args = ["--deep-iteration", "--files", ",".join(str(f) for f in files)]
    if print_data:
        args.append("--print-data-log")
    out = run_kafka_class(classpath, DUMP, args).stdout
    return [line for line in out.splitlines() if line and not line.startswith("[")]


@pytest.fixture(scope="module")
def our_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("ours") / "__cluster_metadata-0"
    log = MetadataLog.open(d, LogConfig(segment_bytes=900))
    voters = voters_record(
        [
            DynamicVoter(1, "localhost", 9093, Uuid.random()),
            DynamicVoter(2, "::1", 9094, Uuid.random()),
        ],
        "CONTROLLER",
    )
    for epoch in (1, 2, 5):
        lc = LeaderChangeMessage(
            version=0,
            leader_id=epoch % 2 + 1,
            voters=[LeaderChangeMessage.Voter(voter_id=1), LeaderChangeMessage.Voter(voter_id=2)],
            granting_voters=[LeaderChangeMessage.Voter(voter_id=epoch % 2 + 1)],
        )
        batch = leader_change_batch(
            0, epoch, lc, timestamp_ms=1_700_000_000_000 + epoch,
            kraft_version=KRaftVersionRecord(kraft_version=1) if epoch == 1 else None,
            voters=voters if epoch == 1 else None,
        )  # fmt: skip
        log.append_as_leader(batch, epoch)
        for i in range(4):
            log.append_records_as_leader(
                [f"value-{epoch}-{i}-{j}".encode() for j in range(i + 1)],
                epoch,
                timestamp_ms=1_700_000_000_100 + i,
            )
        log.append_records_as_leader(
            [SimpleRecord(b"v", b"k", (Header("h1", b"x"), Header("h2", None)))],
            epoch,
            timestamp_ms=1_700_000_000_200,
        )
    log.close()
    w = SnapshotWriter(
        d, OffsetAndEpoch(20, 2), last_contained_log_timestamp=1_700_000_000_150,
        timestamp_ms=1_700_000_000_300, kraft_version=1, voters=voters,
    )  # fmt: skip
    w.append([b"snap-a", b"snap-b"])
    w.append([b"snap-c"])
    w.freeze()
    files = sorted(d.glob("*.log")) + sorted(d.glob("*.checkpoint"))
    assert len(files) >= 4
    return files


@pytest.mark.parametrize("print_data", [False, True])
def test_kafka_dump_equals_ours(
    kafka_classpath: str, our_files: list[Path], print_data: bool
) -> None:
    theirs = _kafka(kafka_classpath, our_files, print_data=print_data)
    ours = _ours(our_files, print_data=print_data)
    batch_lines = [x for x in theirs if x.startswith("baseOffset:")]
    assert batch_lines and all(x.endswith("isvalid: true") for x in batch_lines)
    assert not any("invalid bytes" in x for x in theirs)
    assert ours == theirs


def test_our_dump_equals_kafka_on_damaged_segment(
    kafka_classpath: str, our_files: list[Path], tmp_path: Path
) -> None:
    seg = tmp_path / our_files[0].name
    data = bytearray(our_files[0].read_bytes())
    last = list(iter_batches(data))[-1].position
    data[last + 17] ^= 0xFF  # the stored CRC of the last batch no longer matches
    seg.write_bytes(bytes(data) + b"\x00" * 7)  # and a torn tail
    theirs = _kafka(kafka_classpath, [seg], print_data=False)
    assert any(x.endswith("isvalid: false") for x in theirs)
    assert theirs[-1] == f"Found 7 invalid bytes at the end of {seg.name}"
    ours: list[str] = []
    counts = dump_file(seg, deep_iteration=True, emit=ours.append)
    assert counts["invalid_batches"] == 1 and counts["invalid_bytes"] == 7
    assert counts["first_invalid_position"] == last
    assert ours == theirs


def test_kafka_verifies_our_offset_index(kafka_classpath: str, tmp_path: Path) -> None:
    d = tmp_path / "__cluster_metadata-0"
    log = MetadataLog.open(d, LogConfig(segment_bytes=20_000))
    for i in range(200):
        log.append_records_as_leader([b"x" * 100] * (1 + i % 3), 1 + i // 50, timestamp_ms=i)
    log.close()
    indexes = sorted(d.glob("*.index"))
    assert len(indexes) >= 3 and all(p.stat().st_size >= 16 for p in indexes)
    files = ",".join(map(str, indexes))
    verify = run_kafka_class(
        kafka_classpath, DUMP, ["--verify-index-only", "--index-sanity-check", "--files", files]
    ).stdout
    assert "Mismatch" not in verify and verify.count("passed sanity check") == len(indexes)
    # Kafka's reading of each entry is ours: {last offset of the batch, its position}
    dumped = run_kafka_class(kafka_classpath, DUMP, ["--files", files]).stdout
    theirs = [x for x in dumped.splitlines() if x.startswith("offset:")]
    seg_log = MetadataLog.open(d, LogConfig(segment_bytes=20_000))
    ours = [f"offset: {o} position: {p}" for s in seg_log.segments for o, p in s.index_entries()]
    seg_log.close()
    assert ours == theirs and ours

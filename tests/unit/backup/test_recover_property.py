"""`storage recover` on a survivor's data dir (hypothesis): the recovered log is the survivor's
log (a prefix of what it held: a torn tail is no record) followed by exactly one control batch
[KRaftVersion(1), Voters{survivor}] in an epoch above every epoch it knew, so it holds every
record the survivor held, committed ones included, and the new voter set is the latest."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metaquorum.backup.recover import recover_data_dir
from metaquorum.backup.reform import ListenerAddress, single_voter
from metaquorum.cli.main import main
from metaquorum.protocol.control_records import build_control_batch, control_records_of
from metaquorum.protocol.messages import KRaftVersionRecord, VotersRecord
from metaquorum.protocol.records import build_batch, iter_batches
from metaquorum.protocol.types import Uuid
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.meta_properties import MetaProperties, write_meta_properties
from metaquorum.storage.quorum_state import QuorumStateFile, read_quorum_state, write_quorum_state
from metaquorum.storage.snapshot_records import SnapshotWriter
from metaquorum.storage.snapshots import OffsetAndEpoch

NODE, DIR = 3, Uuid.random()
ME = ListenerAddress("CONTROLLER", "10.0.0.3", 9093)
THREE = VotersRecord(
    version=0,
    voters=[
        *single_voter(1, Uuid.random(), [ListenerAddress("CONTROLLER", "h1", 9093)]).voters,
        *single_voter(2, Uuid.random(), [ListenerAddress("CONTROLLER", "h2", 9093)]).voters,
        *single_voter(NODE, DIR, [ME]).voters,
    ],
)

Entry = tuple[int, int, bool, tuple[bytes, ...]]  # offset, epoch, control, values


def _entries(log: MetadataLog) -> list[Entry]:
    out: list[Entry] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        for b in iter_batches(log.read(offset, 1 << 20).records):
            out.append(
                (
                    b.base_offset,
                    b.partition_leader_epoch,
                    b.is_control,
                    tuple(r.value or b"" for r in b),
                )
            )
            offset = b.next_offset
    return out


def _survivor(
    root: Path, batches: list[tuple[int, int]], snap_at: int | None, qs_bump: int, torn: bytes
) -> tuple[Path, list[Entry]]:
    """A survivor's dir: a Voters batch of three, then `batches` (epoch step, n records);
    optionally a snapshot at batch boundary `snap_at`; quorum-state `qs_bump` above the last
    epoch; `torn` bytes appended to the last segment (an unflushed write)."""
    write_meta_properties(root, MetaProperties(1, "IOoQl4zTThqhIBRuWE4s0A", NODE, DIR), fsync=False)
    part = root / "__cluster_metadata-0"
    log = MetadataLog.open(part, LogConfig(fsync=False, segment_bytes=700))
    epoch = 1
    log.append_as_leader(
        build_control_batch(
            0, epoch, [KRaftVersionRecord(version=0, kraft_version=1), THREE], timestamp_ms=1
        ),
        epoch,
    )
    boundaries = []
    for step, n in batches:
        epoch += step
        start = log.log_end_offset
        log.append_as_leader(
            build_batch(0, epoch, [b"k%d=v" % (start + i) for i in range(n)], timestamp_ms=1), epoch
        )
        boundaries.append((log.log_end_offset, epoch))
    if snap_at is not None and boundaries:
        sid = OffsetAndEpoch(*boundaries[snap_at % len(boundaries)])
        w = SnapshotWriter(
            part,
            sid,
            last_contained_log_timestamp=1,
            timestamp_ms=1,
            kraft_version=1,
            voters=THREE,
            fsync=False,
        )
        w.append([b"k=v"])
        w.freeze()
    log.close()
    log = MetadataLog.open(part, LogConfig(fsync=False))  # the survivor's own view at start
    held, end, last_epoch = _entries(log), log.log_end_offset, log.last_fetched_epoch()
    log.close()
    write_quorum_state(
        part, QuorumStateFile(leader_id=1, leader_epoch=epoch + qs_bump), fsync=False
    )
    if torn:
        last = sorted(part.glob("*.log"))[-1]
        with last.open("ab") as f:
            f.write(torn)
    return part, held, end, last_epoch


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4)), max_size=25),
    snap_at=st.none() | st.integers(0, 100),
    qs_bump=st.integers(0, 3),
    torn=st.sampled_from([b"", b"\x00\x00\x00", b"\x00" * 8 + b"\x00\x00\x00\x40" + b"\x01" * 20]),
    committed_frac=st.floats(0, 1),
)
def test_recovered_log_is_the_survivors_log_plus_one_voters_batch(
    batches: list[tuple[int, int]],
    snap_at: int | None,
    qs_bump: int,
    torn: bytes,
    committed_frac: float,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        part, held, end, last_epoch = _survivor(root, batches, snap_at, qs_bump, torn)
        committed = int(end * committed_frac)  # any end of the committed prefix the quorum had
        snapshots = sorted(p.name for p in part.glob("*.checkpoint"))
        before = read_quorum_state(part)
        assert before is not None
        r = recover_data_dir(root, fsync=False)
        log = MetadataLog.open(part, LogConfig(fsync=False))
        after = _entries(log)
        log.close()
        kept, last = after[:-1], after[-1]
        assert kept == held  # exactly the survivor's records: a prefix, nothing invented
        # every committed record is still there: in the snapshot (below the log start) or kept
        covered = set(range(r.reform.start_offset))
        covered |= {e[0] + i for e in kept for i in range(len(e[3]))}
        assert set(range(committed)) <= covered
        assert sorted(p.name for p in part.glob("*.checkpoint")) == snapshots
        assert last[0] == r.reform.voters_offset == r.reform.end_offset == end
        assert last[2] and last[1] == r.reform.epoch > max(before.leader_epoch, last_epoch)
        (batch,) = iter_batches(
            MetadataLog.open(part, LogConfig(fsync=False)).read(last[0], 1 << 16).records
        )
        kinds = [m for _, m in control_records_of(batch)]
        assert isinstance(kinds[0], KRaftVersionRecord) and kinds[0].kraft_version == 1
        assert isinstance(kinds[1], VotersRecord)
        assert [(v.voter_id, v.voter_directory_id) for v in kinds[1].voters] == [(NODE, DIR)]
        assert [(e.host, e.port) for e in kinds[1].voters[0].endpoints] == [(ME.host, ME.port)]
        after_state = read_quorum_state(part)
        assert after_state is not None and after_state.leader_epoch == r.reform.epoch
        assert after_state.leader_id == -1 and after_state.voted_id == -1


def test_recover_refusals(tmp_path: Path, capsys: object) -> None:
    assert main(["storage", "recover", "--data-dir", str(tmp_path)]) == 1
    (tmp_path / "s").mkdir()
    part, *_ = _survivor(tmp_path / "s", [(0, 1)], None, 0, b"")
    # corruption that is not a torn tail: refused, nothing changed
    seg = sorted(part.glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    data[70] ^= 0xFF
    seg.write_bytes(bytes(data))
    state = (part / "quorum-state").read_bytes()
    assert main(["storage", "recover", "--data-dir", str(tmp_path / "s")]) == 1
    assert seg.read_bytes() == bytes(data) and (part / "quorum-state").read_bytes() == state

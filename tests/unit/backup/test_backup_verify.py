"""verify and restore of a backup on a local destination: checksums, decoding, and a flipped
byte in each kind of file (manifest, snapshot, segment) refused by both."""

from __future__ import annotations

from pathlib import Path

import pytest
from metaquorum.backup.destinations import LocalDestination, open_destination, split_backup_url
from metaquorum.backup.manifest import MANIFEST, BackupError, Manifest
from metaquorum.backup.reform import ListenerAddress
from metaquorum.backup.restore import restore_backup
from metaquorum.backup.verify import verify_backup
from metaquorum.cli.main import main
from metaquorum.protocol.types import Uuid

from tests.unit.backup.helpers import CLUSTER, make_backup

ME = [ListenerAddress("CONTROLLER", "127.0.0.1", 19093)]


def _dest(tmp_path: Path) -> LocalDestination:
    return LocalDestination(tmp_path / "dest", str(tmp_path / "dest"))


def test_manifest_roundtrip_and_any_flipped_byte_is_refused(tmp_path: Path) -> None:
    m = make_backup(tmp_path)
    data = m.to_bytes()
    assert Manifest.parse(data, "x") == m
    for i in range(0, len(data), 7):
        flipped = bytearray(data)
        flipped[i] ^= 0x01
        with pytest.raises(BackupError, match="damaged"):
            Manifest.parse(bytes(flipped), "x")


def test_verify_a_whole_backup(tmp_path: Path) -> None:
    m = make_backup(tmp_path)
    (tmp_path / "w").mkdir()
    r = verify_backup(_dest(tmp_path), "b1", tmp_path / "w")
    assert r.manifest == m
    assert r.records == 19  # 20 batches, the first a Voters control batch
    assert len(m.segments) > 1  # rolled at 600 bytes: contiguity across files is checked
    assert m.snapshot is not None


def _flip(path: Path, at: int) -> None:
    path.chmod(0o600)
    data = bytearray(path.read_bytes())
    data[at] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", ["manifest", "snapshot", "segment"])
def test_flipped_byte_caught_by_verify_and_restore(tmp_path: Path, kind: str) -> None:
    m = make_backup(tmp_path)
    d = tmp_path / "dest" / "b1"
    target = {
        "manifest": d / MANIFEST,
        "snapshot": d / m.snapshot.name if m.snapshot else d,
        "segment": d / m.segments[-1].name,
    }[kind]
    _flip(target, target.stat().st_size // 2)
    (tmp_path / "w").mkdir()
    with pytest.raises(BackupError, match="damaged"):
        verify_backup(_dest(tmp_path), "b1", tmp_path / "w")
    rc = main(["backup", "verify", f"{tmp_path / 'dest'}/b1"])
    assert rc == 1
    data_dir = tmp_path / "restored"
    with pytest.raises(BackupError, match="damaged"):
        restore_backup(_dest(tmp_path), "b1", data_dir, node_id=1, endpoints=ME)
    assert not data_dir.exists()  # nothing left behind


def test_truncated_segment_is_refused(tmp_path: Path) -> None:
    """A segment cut short (an upload interrupted by hand, a disk full): its size differs."""
    m = make_backup(tmp_path)
    d = tmp_path / "dest" / "b1"
    last = m.segments[-1]
    data = (d / last.name).read_bytes()
    (d / last.name).write_bytes(data[:-10])
    with pytest.raises(BackupError, match=r"sha256|bytes"):
        verify_backup(_dest(tmp_path), "b1", tmp_path)


def test_destination_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(BackupError, match="does not exist"):
        open_destination(str(tmp_path / "nope")).names()
    with pytest.raises(BackupError, match="names no backup"):
        split_backup_url("s3://bucket")
    make_backup(tmp_path)
    with pytest.raises(BackupError, match="no manifest"):
        verify_backup(_dest(tmp_path), "b2", tmp_path)
    # an interrupted backup (data files, no manifest) is not listed
    (tmp_path / "dest" / "b0").mkdir()
    (tmp_path / "dest" / "b0" / "00000000000000000000.log").write_bytes(b"x")
    assert _dest(tmp_path).names() == ["b1"]
    assert main(["backup", "list", f"file://{tmp_path / 'dest'}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("b1\t")
    assert main(["backup", "list", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0]


def test_restore_refuses_non_empty_dir_and_other_cluster(tmp_path: Path) -> None:
    make_backup(tmp_path)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "meta.properties").write_text("x")
    with pytest.raises(BackupError, match="not empty"):
        restore_backup(_dest(tmp_path), "b1", busy, node_id=1, endpoints=ME)
    assert (busy / "meta.properties").read_text() == "x"
    other = str(Uuid.random())
    with pytest.raises(BackupError, match=f"of cluster {CLUSTER}, not {other}"):
        restore_backup(
            _dest(tmp_path),
            "b1",
            tmp_path / "new",
            node_id=1,
            endpoints=ME,
            expect_cluster_id=other,
        )
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("snapshot_at", [5, None])
def test_restore_holds_the_backup_then_one_voters_batch(
    tmp_path: Path, snapshot_at: int | None
) -> None:
    from metaquorum.protocol.control_records import control_records_of
    from metaquorum.protocol.messages import VotersRecord
    from metaquorum.protocol.records import iter_batches
    from metaquorum.storage.replica import open_replica_storage
    from metaquorum.storage.snapshot_records import read_snapshot

    m = make_backup(tmp_path, snapshot_at=snapshot_at)
    data_dir = tmp_path / "restored"
    r = restore_backup(_dest(tmp_path), "b1", data_dir, node_id=4, endpoints=ME)
    storage = open_replica_storage(data_dir, node_id=4, cluster_id=CLUSTER)
    log = storage.log
    assert (log.log_start_offset, log.log_end_offset) == (m.start_offset, m.end_offset + 2)
    assert storage.meta.directory_id == r.directory_id
    restored, offset = b"", m.start_offset
    while offset < log.log_end_offset:  # a read stays in one segment: walk them
        chunk = log.read(offset, 1 << 20).records
        restored += chunk
        offset = list(iter_batches(chunk))[-1].next_offset
    original = b"".join((tmp_path / "dest" / "b1" / s.name).read_bytes() for s in m.segments)
    assert restored.startswith(original)  # byte for byte, offsets and epochs unchanged
    last = list(iter_batches(restored))[-1]
    assert last.base_offset == m.end_offset and last.partition_leader_epoch == m.end_epoch + 1
    voters = [msg for _, msg in control_records_of(last) if isinstance(msg, VotersRecord)]
    assert [(v.voter_id, v.voter_directory_id) for v in voters[0].voters] == [(4, r.directory_id)]
    state = storage.read_election_state()
    assert state is not None and state.leader_epoch == m.end_epoch + 1
    snaps = sorted(p.name for p in storage.partition_dir.glob("*.checkpoint"))
    if snapshot_at is None:  # a bootstrap checkpoint with the new voter, as format --standalone
        assert snaps == ["00000000000000000000-0000000000.checkpoint"]
        boot = read_snapshot(storage.partition_dir / snaps[0])
        assert boot.voters is not None and boot.voters.voters[0].voter_id == 4
    else:
        assert m.snapshot is not None and snaps == [m.snapshot.name]
    storage.close()

"""Snapshot framing, `storage format` and `dump-log`: contents, refusals, error messages."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

import pytest
from metaquorum.cli import dump_log_cmd, storage_cmd
from metaquorum.protocol.records import build_batch
from metaquorum.protocol.types import Uuid
from metaquorum.storage.dump import dump_file
from metaquorum.storage.formatter import DynamicVoter, FormatterError, parse_initial_controllers
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.meta_properties import read_meta_properties
from metaquorum.storage.snapshot_records import SnapshotWriter, read_snapshot
from metaquorum.storage.snapshots import OffsetAndEpoch, SnapshotError

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="metaquorum")
    sub = parser.add_subparsers()
    storage_cmd.register(sub)
    dump_log_cmd.register(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


def _config(tmp_path: Path, **extra: str) -> Path:
    props = {
        "process.roles": "controller",
        "node.id": "1",
        "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://localhost:19093",
        "metadata.log.dir": str(tmp_path / "meta"),
        "log.dirs": str(tmp_path / "meta"),
        **extra,
    }
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def test_snapshot_writer_and_reader(tmp_path: Path) -> None:
    w = SnapshotWriter(
        tmp_path, OffsetAndEpoch(10, 2), last_contained_log_timestamp=5, timestamp_ms=6
    )
    w.append([b"a", b"b"])
    w.append([b"c"])
    path = w.freeze()
    assert path.name == "00000000000000000010-0000000002.checkpoint"
    assert stat.S_IMODE(path.stat().st_mode) == 0o400
    snap = read_snapshot(path)
    assert snap.header.last_contained_log_timestamp == 5
    assert [r.value for r in snap.records] == [b"a", b"b", b"c"]
    assert [r.offset for r in snap.records] == [1, 2, 3]
    assert snap.batches == 4 and snap.kraft_version is None


def test_snapshot_without_footer_is_refused(tmp_path: Path) -> None:
    w = SnapshotWriter(
        tmp_path, OffsetAndEpoch(1, 1), last_contained_log_timestamp=0, timestamp_ms=0
    )
    w.raw.freeze()  # frozen without the footer
    with pytest.raises(SnapshotError, match="no SnapshotFooter"):
        read_snapshot(tmp_path / "00000000000000000001-0000000001.checkpoint")
    bad = tmp_path / "00000000000000000002-0000000001.checkpoint"
    bad.write_bytes(build_batch(0, 1, [b"data first"], timestamp_ms=0))
    with pytest.raises(SnapshotError, match="data before the SnapshotHeader"):
        read_snapshot(bad)
    torn = tmp_path / "00000000000000000003-0000000001.checkpoint"
    torn.write_bytes(build_batch(0, 1, [b"x"], timestamp_ms=0)[:-4])
    with pytest.raises(SnapshotError, match=r"00000000000000000003-0000000001\.checkpoint"):
        read_snapshot(torn)


def test_format_standalone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path)
    assert _cli(["storage", "format", "-c", str(cfg), "-t", CLUSTER, "--standalone"]) == 0
    meta = read_meta_properties(tmp_path / "meta")
    assert meta is not None and (meta.version, meta.cluster_id, meta.node_id) == (1, CLUSTER, 1)
    ckpt = tmp_path / "meta/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
    snap = read_snapshot(ckpt)
    assert snap.kraft_version is not None and snap.kraft_version.kraft_version == 1
    assert snap.voters is not None
    [voter] = snap.voters.voters
    assert voter.voter_id == 1 and voter.voter_directory_id == meta.directory_id
    assert [(e.name, e.host, e.port) for e in voter.endpoints] == [
        ("CONTROLLER", "localhost", 19093)
    ]
    assert (
        voter.kraft_version_feature.min_supported_version,
        voter.kraft_version_feature.max_supported_version,
    ) == (0, 1)
    assert snap.records == []
    # a second format is refused with the fix named; --ignore-formatted skips
    capsys.readouterr()
    assert _cli(["storage", "format", "-c", str(cfg), "-t", CLUSTER, "--standalone"]) == 1
    err = capsys.readouterr().err
    assert "already formatted" in err and "--ignore-formatted" in err and err.count("\n") == 1
    before = ckpt.read_bytes()
    assert _cli(["storage", "format", "-c", str(cfg), "-t", CLUSTER, "-s", "-g"]) == 0
    assert ckpt.read_bytes() == before


def test_format_initial_controllers(tmp_path: Path) -> None:
    cfg = _config(tmp_path, **{"node.id": "2"})
    ids = [Uuid.random() for _ in range(3)]
    spec = ",".join(f"{i + 1}@host{i + 1}:{9090 + i}:{u}" for i, u in enumerate(ids))
    assert _cli(["storage", "format", "-c", str(cfg), "-t", CLUSTER, "-I", spec]) == 0
    meta = read_meta_properties(tmp_path / "meta")
    assert meta is not None and meta.directory_id == ids[1]
    snap = read_snapshot(
        tmp_path / "meta/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
    )
    assert snap.voters is not None
    assert [
        (v.voter_id, v.voter_directory_id, v.endpoints[0].host, v.endpoints[0].port)
        for v in snap.voters.voters
    ] == [(i + 1, u, f"host{i + 1}", 9090 + i) for i, u in enumerate(ids)]


@pytest.mark.parametrize(
    ("argv_tail", "extra", "match"),
    [
        (["-t", "not-a-uuid", "-s"], {}, "random-uuid"),
        (["-t", CLUSTER], {}, "--standalone"),
        (
            ["-t", CLUSTER, "-s"],
            {"controller.quorum.voters": "1@localhost:9093"},
            "controller.quorum.voters",
        ),
        (["-t", CLUSTER, "-I", "1@h:9093"], {}, "id@host:port:directoryId"),
        (["-t", CLUSTER, "-s"], {"node.id": "x"}, "node.id"),
    ],
)
def test_format_bad_input(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv_tail: list[str],
    extra: dict[str, str],
    match: str,
) -> None:
    cfg = _config(tmp_path, **extra)
    assert _cli(["storage", "format", "-c", str(cfg), *argv_tail]) == 1
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1
    assert not (tmp_path / "meta" / "meta.properties").exists()


def test_dynamic_voter_parse() -> None:
    u = Uuid.random()
    assert DynamicVoter.parse(f"3@[::1]:9093:{u}") == DynamicVoter(3, "::1", 9093, u)
    with pytest.raises(FormatterError, match="twice"):
        parse_initial_controllers(f"1@a:1:{u},1@b:2:{u}")


def test_random_uuid(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["storage", "random-uuid"]) == 0
    out = capsys.readouterr().out.strip()
    assert len(out) == 22 and str(Uuid.from_string(out)) == out


def test_dump_log_segment_and_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = MetadataLog.open(tmp_path / "p", LogConfig(fsync=False))
    log.append_records_as_leader([b"hello", b"world"], 4, timestamp_ms=77)
    log.close()
    seg = tmp_path / "p" / "00000000000000000000.log"
    assert _cli(["dump-log", "--files", str(seg), "--print-data"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Dumping {seg}"
    assert "baseOffset: 0 lastOffset: 1 count: 2" in out[2] and "partitionLeaderEpoch: 4" in out[2]
    assert "isvalid: true" in out[2]
    assert out[3].startswith("| offset: 0 CreateTime: 77 keySize: -1 valueSize: 5") and out[
        3
    ].endswith("payload: hello")
    cfg = _config(tmp_path)
    _cli(["storage", "format", "-c", str(cfg), "-t", CLUSTER, "-s"])
    capsys.readouterr()
    ckpt = tmp_path / "meta/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
    assert _cli(["dump-log", "--files", str(ckpt), "--deep-iteration"]) == 0
    text = capsys.readouterr().out
    # In snapshots Kafka's DumpLogSegments prints "<Type> {json}" (no colon).
    assert 'SnapshotHeader {"version":0,' in text
    assert 'KRaftVersion {"version":0,"kRaftVersion":1}' in text
    assert "KRaftVoters {" in text and 'SnapshotFooter {"version":0}' in text


def test_dump_log_reports_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seg = tmp_path / "00000000000000000000.log"
    good = build_batch(0, 1, [b"a"], timestamp_ms=0)
    bad = bytearray(build_batch(1, 1, [b"b"], timestamp_ms=0))
    bad[-1] ^= 1
    seg.write_bytes(good + bytes(bad) + good[:20])
    counts = dump_file(seg, deep_iteration=True, emit=lambda _l: None)
    assert counts == {
        "batches": 2,
        "invalid_batches": 1,
        "invalid_bytes": 20,
        "first_invalid_position": len(good),
        "invalid_position": 2 * len(good),
    }
    assert _cli(["dump-log", "--files", str(seg)]) == 1
    captured = capsys.readouterr()
    assert "isvalid: false" in captured.out
    assert "Found 20 invalid bytes at the end of 00000000000000000000.log" in captured.out
    assert f"1 invalid batches (first at byte {len(good)})" in captured.err
    assert f"20 invalid trailing bytes at byte {2 * len(good)}" in captured.err
    other = tmp_path / "foo.txt"
    other.write_text("x")
    assert _cli(["dump-log", "--files", str(other)]) == 1
    assert ".log segments and .checkpoint" in capsys.readouterr().err
    assert _cli(["dump-log", "--files", str(tmp_path / "00000000000000000009.log")]) == 1
    assert os.path.basename("00000000000000000009.log") in capsys.readouterr().err


def test_storage_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path)
    assert _cli(["storage", "info", "-c", str(cfg)]) == 0
    assert "not formatted" in capsys.readouterr().out
    _cli(["storage", "format", "-c", str(cfg), "-t", CLUSTER, "-s"])
    capsys.readouterr()
    assert _cli(["storage", "info", "-c", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert f"'cluster.id': '{CLUSTER}'" in out and "'node.id': '1'" in out
    (tmp_path / "meta" / "meta.properties").write_text("version=7\n")
    assert _cli(["storage", "info", "-c", str(cfg)]) == 1
    err = capsys.readouterr().err
    assert "meta.properties" in err and "unknown version" in err


def test_format_applies_the_node_environment_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`storage format` honours METAQUORUM_<KEY> like `server start`, so a pod whose node.id and
    data dir come from its environment formats the directory it will run on."""
    cfg = _config(tmp_path)
    monkeypatch.setenv("METAQUORUM_NODE_ID", "7")
    monkeypatch.setenv("METAQUORUM_METADATA_LOG_DIR", str(tmp_path / "pod"))
    monkeypatch.setenv("METAQUORUM_LOG_DIRS", str(tmp_path / "pod"))
    assert _cli(["storage", "format", "-c", str(cfg), "-t", CLUSTER, "--standalone"]) == 0
    assert read_meta_properties(tmp_path / "meta") is None
    meta = read_meta_properties(tmp_path / "pod")
    assert meta is not None and meta.node_id == 7

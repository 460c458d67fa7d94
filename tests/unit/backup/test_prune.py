"""`backup prune`: the retention policy (count, age, the newest always kept), manifest-first
deletion (an interrupted prune never leaves a listed half-backup), the CLI's lines, and the
one-line JSON summary `backup create` leaves for the operator."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from metaquorum.backup.destinations import LocalDestination
from metaquorum.backup.manifest import MANIFEST, BackupError, FileEntry, Manifest
from metaquorum.backup.prune import Policy, doomed, parse_duration, prune, taken_at
from metaquorum.cli.backup_cmd import write_termination_summary
from metaquorum.cli.main import main

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


def _name(hours_ago: int, offset: int = 100) -> str:
    t = NOW - timedelta(hours=hours_ago)
    return f"{t.strftime('%Y%m%dT%H%M%SZ')}-{offset:020d}"


def _put(root: Path, name: str, *, manifest: bool = True) -> Manifest:
    d = root / name
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"x" * 10)
    m = Manifest(
        name=name,
        cluster_id="IOoQl4zTThqhIBRuWE4s0A",
        created_ms=0,
        software_version="test",
        start_offset=0,
        start_epoch=0,
        end_offset=100,
        end_epoch=1,
        kraft_version=1,
        voters=[],
        voters_source="log",
        leader_id=0,
        leader_epoch=1,
        files=[FileEntry("00000000000000000000.log", "segment", 10, "0" * 64, 0, 100)],
    )
    if manifest:
        (d / MANIFEST).write_bytes(m.to_bytes())
    return m


def test_policy_keeps_the_newest_count() -> None:
    names = [_name(h) for h in (1, 2, 3, 4, 5)]
    assert doomed(names, Policy(keep=3), NOW) == [_name(5), _name(4)]
    assert doomed(names, Policy(keep=5), NOW) == []


def test_policy_drops_the_old_but_never_the_newest() -> None:
    names = [_name(h) for h in (10, 30, 50)]
    assert doomed(names, Policy(keep=10, max_age=timedelta(hours=24)), NOW) == [
        _name(50),
        _name(30),
    ]
    # every backup too old: the newest stays anyway
    assert doomed(names, Policy(keep=10, max_age=timedelta(hours=1)), NOW) == [
        _name(50),
        _name(30),
    ]
    assert doomed([_name(99)], Policy(keep=1, max_age=timedelta(hours=1)), NOW) == []


def test_names_create_did_not_make_are_left_alone() -> None:
    assert taken_at("my-copy") is None
    assert doomed(["my-copy", _name(1), _name(2)], Policy(keep=1), NOW) == [_name(2)]


def test_bad_policy_is_one_line() -> None:
    with pytest.raises(BackupError, match="keep at least 1"):
        doomed([], Policy(keep=0), NOW)
    for bad in ("", "30", "d", "0d", "3y", "-1d"):
        with pytest.raises(BackupError, match="unit s, m, h, d or w"):
            parse_duration(bad)
    assert parse_duration("30d") == timedelta(days=30)
    assert parse_duration("90m") == timedelta(minutes=90)


def test_prune_deletes_only_dropped_complete_backups(tmp_path: Path) -> None:
    root = tmp_path / "dest"
    for h in (1, 2, 3):
        _put(root, _name(h))
    _put(root, _name(48, offset=7), manifest=False)  # being written, or interrupted
    (root / _name(48, offset=7) / "extra").write_bytes(b"")
    dest = LocalDestination(root, str(root))
    assert prune(dest, Policy(keep=2), NOW) == [_name(3)]
    assert dest.names() == [_name(2), _name(1)]
    assert not (root / _name(3)).exists()  # files gone and the empty directory too
    assert (root / _name(48, offset=7) / "00000000000000000000.log").exists()


class _Interrupted(Exception):
    pass


class _DiesAfterManifest(LocalDestination):
    calls: list[str]

    def delete_manifest(self, name: str) -> None:
        self.calls.append(f"manifest {name}")
        super().delete_manifest(name)

    def delete_files(self, name: str, files: list[str]) -> None:
        self.calls.append(f"files {name}")
        raise _Interrupted


def test_manifest_goes_first_so_an_interrupted_prune_lists_no_half_backup(tmp_path: Path) -> None:
    root = tmp_path / "dest"
    for h in (1, 2):
        _put(root, _name(h))
    dest = _DiesAfterManifest(root, str(root))
    dest.calls = []
    with pytest.raises(_Interrupted):
        prune(dest, Policy(keep=1), NOW)
    assert dest.calls == [f"manifest {_name(2)}", f"files {_name(2)}"]
    assert dest.names() == [_name(1)]  # the half-deleted one is not listed
    assert (root / _name(2) / "00000000000000000000.log").exists()


def test_prune_refuses_a_file_name_outside_the_backup(tmp_path: Path) -> None:
    dest = LocalDestination(tmp_path, str(tmp_path))
    (tmp_path / "b").mkdir()
    with pytest.raises(BackupError, match="outside it"):
        dest.delete_files("b", ["../other"])


def test_cli_prune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "dest"
    now = datetime.now(UTC)
    for days in (0, 10, 40):
        t = now - timedelta(days=days, minutes=1)
        _put(root, f"{t.strftime('%Y%m%dT%H%M%SZ')}-{100:020d}")
    assert main(["backup", "prune", str(root), "--keep", "5", "--max-age", "30d"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"pruned 1 backups at {root} (keep 5, max age 30d): ")
    assert len(LocalDestination(root, str(root)).names()) == 2
    assert main(["backup", "prune", str(root), "--keep", "5", "--max-age", "1 month"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unit s, m, h, d or w" in err[0]
    assert main(["backup", "prune", str(tmp_path / "nope"), "--keep", "1"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_termination_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = _put(tmp_path / "d", _name(1))
    log = tmp_path / "termination-log"
    monkeypatch.setenv("METAQUORUM_TERMINATION_LOG", str(log))
    assert not write_termination_summary(m, "s3://b/p/", 1.5)  # no such file: not created
    assert not log.exists()
    log.write_text("")
    assert write_termination_summary(m, "s3://b/p/", 1.5)
    text = log.read_text()
    assert text.count("\n") == 1
    doc = json.loads(text)
    assert doc["url"] == f"s3://b/p/{_name(1)}"
    assert (doc["endOffset"], doc["sizeBytes"], doc["durationSeconds"]) == (100, 10, 1.5)

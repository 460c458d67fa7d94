"""`metaquorum storage format` against Kafka 4.3.1's `kafka.tools.StorageTool format`: the same
meta.properties keys and meaning, and bootstrap checkpoints that decode to the same records
(Kafka's DumpLogSegments validates ours and prints the same structure)."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest
from metaquorum.protocol.types import Uuid
from metaquorum.storage.formatter import ServerConfig, format_storage, parse_initial_controllers
from metaquorum.storage.meta_properties import parse_properties
from metaquorum.storage.snapshot_records import read_snapshot

from tests.conformance.conftest import run_kafka_class

pytestmark = pytest.mark.conformance

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
CKPT = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"


def _config(root: Path, node_id: int) -> Path:
    meta = root / "meta"
    text = (
        "process.roles=controller\n"
        f"node.id={node_id}\n"
        "controller.listener.names=CONTROLLER\n"
        "listeners=CONTROLLER://localhost:19093\n"
        "controller.quorum.bootstrap.servers=localhost:19093\n"
        f"metadata.log.dir={meta}\n"
        f"log.dirs={meta}\n"
    )
    root.mkdir(parents=True, exist_ok=True)
    (root / "server.properties").write_text(text)
    return root / "server.properties"


def _kafka_format(classpath: str, cfg: Path, *flags: str, check: bool = True) -> int:
    args = ["format", "-c", str(cfg), "-t", CLUSTER, *flags]
    return run_kafka_class(classpath, "kafka.tools.StorageTool", args, check=check).returncode


def _props(d: Path) -> dict[str, str]:
    return parse_properties((d / "meta.properties").read_text())


def _normalise_dump(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        line = re.sub(r"CreateTime: \d+", "CreateTime: T", line)
        line = re.sub(r"crc: \d+", "crc: C", line)
        line = re.sub(r'"lastContainedLogTimestamp":\d+', '"lastContainedLogTimestamp":T', line)
        line = re.sub(r'"voterDirectoryId":"[A-Za-z0-9_-]{22}"', '"voterDirectoryId":D', line)
        out.append(line)
    return out


def _dump(classpath: str, files: list[Path]) -> list[list[str]]:
    args = ["--deep-iteration", "--files", ",".join(map(str, files))]
    out = run_kafka_class(classpath, "org.apache.kafka.tools.DumpLogSegments", args).stdout
    per_file: list[list[str]] = []
    for line in out.splitlines():
        if line.startswith("Dumping "):
            per_file.append([])
        elif per_file and line:
            per_file[-1].append(line)
    return per_file


def test_standalone_same_files(kafka_classpath: str, tmp_path: Path) -> None:
    kcfg = _config(tmp_path / "kafka", 1)
    ocfg = _config(tmp_path / "ours", 1)
    _kafka_format(kafka_classpath, kcfg, "--standalone")
    format_storage(ServerConfig.load(ocfg), CLUSTER, standalone=True)
    kmeta, ometa = tmp_path / "kafka/meta", tmp_path / "ours/meta"

    kp, op = _props(kmeta), _props(ometa)
    assert set(kp) == set(op) == {"version", "cluster.id", "node.id", "directory.id"}
    assert {k: kp[k] for k in ("version", "cluster.id", "node.id")} == {
        k: op[k] for k in ("version", "cluster.id", "node.id")
    }
    Uuid.from_string(op["directory.id"])

    # Same raft files; Kafka's bootstrap.checkpoint (feature levels) is the one we leave out.
    kfiles = {str(p.relative_to(kmeta)) for p in kmeta.rglob("*") if p.is_file()}
    ofiles = {str(p.relative_to(ometa)) for p in ometa.rglob("*") if p.is_file()}
    assert kfiles - ofiles == {"bootstrap.checkpoint"} and ofiles <= kfiles
    assert stat.S_IMODE((kmeta / CKPT).stat().st_mode) == stat.S_IMODE(
        (ometa / CKPT).stat().st_mode
    )

    ks, os_ = read_snapshot(kmeta / CKPT), read_snapshot(ometa / CKPT)
    assert ks.kraft_version == os_.kraft_version and ks.kraft_version is not None
    assert ks.kraft_version.kraft_version == 1
    assert ks.header.version == os_.header.version and ks.records == os_.records == []
    assert ks.voters is not None and os_.voters is not None
    # each voter record carries its own directory's id
    assert str(ks.voters.voters[0].voter_directory_id) == kp["directory.id"]
    assert str(os_.voters.voters[0].voter_directory_id) == op["directory.id"]
    kv = ks.voters.voters[0]
    ov = os_.voters.voters[0]
    assert (kv.voter_id, kv.endpoints, kv.kraft_version_feature) == (
        ov.voter_id,
        ov.endpoints,
        ov.kraft_version_feature,
    )
    kdump, odump = _dump(kafka_classpath, [kmeta / CKPT, ometa / CKPT])
    assert all("isvalid: true" in x for x in odump if x.startswith("baseOffset"))
    assert _normalise_dump(kdump) == _normalise_dump(odump)


def test_initial_controllers_same_records(kafka_classpath: str, tmp_path: Path) -> None:
    ids = [Uuid.random() for _ in range(3)]
    spec = ",".join(f"{i + 1}@localhost:{19093 + i}:{u}" for i, u in enumerate(ids))
    kcfg = _config(tmp_path / "kafka", 2)
    ocfg = _config(tmp_path / "ours", 2)
    _kafka_format(kafka_classpath, kcfg, "--initial-controllers", spec)
    format_storage(
        ServerConfig.load(ocfg), CLUSTER, initial_controllers=parse_initial_controllers(spec)
    )
    kmeta, ometa = tmp_path / "kafka/meta", tmp_path / "ours/meta"
    kp, op = _props(kmeta), _props(ometa)
    assert kp["directory.id"] == op["directory.id"] == str(ids[1])
    assert {k: v for k, v in kp.items()} == op
    ks, os_ = read_snapshot(kmeta / CKPT), read_snapshot(ometa / CKPT)
    assert ks.voters == os_.voters and ks.kraft_version == os_.kraft_version
    assert ks.voters is not None and len(ks.voters.voters) == 3
    kdump, odump = _dump(kafka_classpath, [kmeta / CKPT, ometa / CKPT])
    assert _normalise_dump(kdump) == _normalise_dump(odump)


def test_both_refuse_a_formatted_directory(kafka_classpath: str, tmp_path: Path) -> None:
    cfg = _config(tmp_path / "x", 1)
    format_storage(ServerConfig.load(cfg), CLUSTER, standalone=True)
    before = (tmp_path / "x/meta/meta.properties").read_bytes()
    assert _kafka_format(kafka_classpath, cfg, "--standalone", check=False) != 0
    assert (tmp_path / "x/meta/meta.properties").read_bytes() == before
    # and Kafka's formatted directory is refused by ours
    kcfg = _config(tmp_path / "k", 1)
    _kafka_format(kafka_classpath, kcfg, "--standalone")
    with pytest.raises(ValueError, match="already formatted"):
        format_storage(ServerConfig.load(kcfg), CLUSTER, standalone=True)

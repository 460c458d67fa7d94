"""Kafka 4.3's own controller accepts `metaquorum storage recover`'s re-formed directory: a
directory formatted by Kafka's StorageTool with three initial controllers of which only node 1
exists (a survivor of a lost majority) cannot elect a leader under `kafka.Kafka`; after
`storage recover` the same Kafka controller elects itself in a higher epoch, keeps our voters
batch byte for byte and appends after it."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from metaquorum.cli.main import main
from metaquorum.protocol.control_records import control_records_of
from metaquorum.protocol.messages import VotersRecord
from metaquorum.protocol.records import iter_valid_batches
from metaquorum.protocol.types import Uuid
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.quorum_state import read_quorum_state

from tests.conformance.conftest import run_kafka_class
from tests.conformance.test_storage_kafka_dir import CLUSTER, _run_controller, _write_config

pytestmark = [pytest.mark.conformance, pytest.mark.slow]


def _leads_within(classpath: str, root: Path, cfg: Path, seconds: float) -> bool:
    partition = root / "meta" / "__cluster_metadata-0"
    proc = subprocess.Popen(
        ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath, "kafka.Kafka", str(cfg)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            state = partition / "quorum-state"
            if state.exists() and '"leaderId":1' in state.read_text():
                return True
            time.sleep(0.3)
        return False
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_kafka_controller_leads_a_recovered_survivor(kafka_classpath: str, tmp_path: Path) -> None:
    cfg = _write_config(tmp_path)
    port = int(cfg.read_text().split("CONTROLLER://127.0.0.1:")[1].split()[0])
    me = Uuid.random()
    initial = f"1@127.0.0.1:{port}:{me},2@127.0.0.1:1:{Uuid.random()},3@127.0.0.1:2:{Uuid.random()}"
    args = ["format", "-c", str(cfg), "-t", CLUSTER, "--initial-controllers", initial]
    run_kafka_class(kafka_classpath, "kafka.tools.StorageTool", args)
    partition = tmp_path / "meta" / "__cluster_metadata-0"
    assert not _leads_within(kafka_classpath, tmp_path, cfg, 8)  # 1 of 3 voters: no leader
    before = read_quorum_state(partition)

    assert main(["storage", "recover", "--data-dir", str(tmp_path / "meta")]) == 0
    segment = partition / "00000000000000000000.log"
    written = segment.read_bytes()
    ours = list(iter_valid_batches(written))[-1]
    voters = next(m for _, m in control_records_of(ours) if isinstance(m, VotersRecord))
    assert [(v.voter_id, v.voter_directory_id) for v in voters.voters] == [(1, me)]

    _run_controller(kafka_classpath, tmp_path, cfg, len(written) + 500)

    assert segment.read_bytes()[: len(written)] == written  # Kafka kept our batch
    state = read_quorum_state(partition)
    assert state is not None and state.leader_id == 1
    assert state.leader_epoch > ours.partition_leader_epoch > (before.leader_epoch if before else 0)
    log = MetadataLog.open(partition, LogConfig())
    try:
        batches = list(iter_valid_batches(log.read(0, 1 << 20).records))
        assert batches[0].base_offset == ours.base_offset and batches[1].is_control
        assert batches[1].partition_leader_epoch == state.leader_epoch
    finally:
        log.close()


def test_kafka_controller_leads_a_restored_directory(kafka_classpath: str, tmp_path: Path) -> None:
    """`backup restore` into a Kafka controller's metadata.log.dir (a backup without snapshot
    whose log holds only control records, which Kafka's QuorumController can replay): Kafka
    elects the restored node alone, keeps the backup's batch and our voters batch byte for
    byte, and appends after them."""
    from metaquorum.backup.destinations import LocalDestination
    from metaquorum.backup.reform import ListenerAddress
    from metaquorum.backup.restore import restore_backup

    from tests.unit.backup.helpers import make_backup

    m = make_backup(tmp_path / "b", snapshot_at=None, records=1)  # one Voters control batch
    cfg = _write_config(tmp_path)
    port = int(cfg.read_text().split("CONTROLLER://127.0.0.1:")[1].split()[0])
    r = restore_backup(
        LocalDestination(tmp_path / "b" / "dest", "dest"),
        "b1",
        tmp_path / "meta",
        node_id=1,
        endpoints=[ListenerAddress("CONTROLLER", "127.0.0.1", port)],
    )
    partition = tmp_path / "meta" / "__cluster_metadata-0"
    segment = partition / "00000000000000000000.log"
    written = segment.read_bytes()
    assert written.startswith((tmp_path / "b" / "dest" / "b1" / m.segments[0].name).read_bytes())

    _run_controller(kafka_classpath, tmp_path, cfg, len(written) + 500)

    assert segment.read_bytes()[: len(written)] == written
    state = read_quorum_state(partition)
    assert state is not None and state.leader_id == 1 and state.leader_epoch > r.reform.epoch

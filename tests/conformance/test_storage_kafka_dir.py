"""Our storage reads a metadata log directory that a real Kafka 4.3.1 controller wrote: start
`kafka.Kafka` (controller-only, standalone, loopback), let it elect itself and append, stop it,
then open the directory with our reader and dump it with our dump-log and with Kafka's
DumpLogSegments."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from metaquorum.core.states import LeaderState, ResignedState
from metaquorum.protocol.control_records import leader_change_batch
from metaquorum.protocol.messages import KRaftVersionRecord, LeaderChangeMessage
from metaquorum.protocol.records import iter_valid_batches
from metaquorum.protocol.types import METADATA_TOPIC_ID
from metaquorum.runtime.storage_io import election_to_file
from metaquorum.storage.dump import dump_file
from metaquorum.storage.epoch_cache import parse_checkpoint
from metaquorum.storage.formatter import ServerConfig, format_storage
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum.storage.meta_properties import read_meta_properties
from metaquorum.storage.quorum_state import QuorumStateFile, read_quorum_state, write_quorum_state
from metaquorum.storage.snapshot_records import read_snapshot

from tests.conformance.conftest import run_kafka_class

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_config(root: Path) -> Path:
    port = _free_port()
    meta = root / "meta"
    cfg = root / "controller.properties"
    cfg.write_text(
        "process.roles=controller\nnode.id=1\n"
        "controller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.quorum.bootstrap.servers=127.0.0.1:{port}\n"
        f"metadata.log.dir={meta}\nlog.dirs={meta}\n"
        "metadata.max.idle.interval.ms=10\n"
    )
    return cfg


def _run_controller(classpath: str, root: Path, cfg: Path, min_log_bytes: int) -> None:
    """Run kafka.Kafka until it leads and its log holds `min_log_bytes`, then stop it."""
    partition = root / "meta" / "__cluster_metadata-0"
    log_out = (root / "kafka.out").open("w")
    proc = subprocess.Popen(
        ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath,
         "kafka.Kafka", str(cfg)],
        stdout=log_out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seg = partition / "00000000000000000000.log"
            state = partition / "quorum-state"
            # leader change + bootstrap records + no-ops
            elected = state.exists() and '"leaderId":1' in state.read_text()
            if elected and seg.exists() and seg.stat().st_size > min_log_bytes:
                break
            if proc.poll() is not None:
                pytest.fail(f"kafka exited early: {(root / 'kafka.out').read_text()[-2000:]}")
            time.sleep(0.3)
        else:
            pytest.fail("kafka controller did not become leader and append within 60 s")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log_out.close()


@pytest.fixture(scope="module")
def kafka_dir(kafka_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kafka-controller")
    cfg = _write_config(root)
    run_kafka_class(kafka_classpath, "kafka.tools.StorageTool",
                    ["format", "-c", str(cfg), "-t", CLUSTER, "--standalone"])  # fmt: skip
    _run_controller(kafka_classpath, root, cfg, 6000)
    return root / "meta"


def test_kafka_boots_from_our_format_and_quorum_state(kafka_classpath: str, tmp_path: Path) -> None:
    """The reverse direction: Kafka's controller starts on a directory we formatted, reads
    our quorum-state (it continues from our epoch), and we read what it then wrote."""
    cfg = _write_config(tmp_path)
    format_storage(ServerConfig.load(cfg), CLUSTER, standalone=True)
    partition = tmp_path / "meta" / "__cluster_metadata-0"
    write_quorum_state(partition, QuorumStateFile(leader_id=-1, leader_epoch=5, voted_id=-1))
    _run_controller(kafka_classpath, tmp_path, cfg, 500)
    state = read_quorum_state(partition)
    assert state is not None and state.leader_id == 1 and state.leader_epoch > 5
    log = MetadataLog.open(partition, LogConfig())
    try:
        assert log.recovery.truncated_bytes == 0
        assert log.epoch_cache.entries[0].epoch == state.leader_epoch
        first = next(iter_valid_batches(log.read(0, 1 << 20).records))
        assert first.is_control and first.partition_leader_epoch == state.leader_epoch
    finally:
        log.close()


def test_leader_quorum_state_as_kafka_writes_it(kafka_dir: Path) -> None:
    """Kafka 4.3.1's leader (and resigned leader) writes quorum-state with votedId -1
    (`withElectedLeader(epoch, id, Optional.empty())`); our leader's election state encodes to
    the very same file (issue 12: ours wrote votedId = its own id)."""
    partition = kafka_dir / "__cluster_metadata-0"
    theirs = (partition / "quorum-state").read_text(encoding="utf-8")
    state = read_quorum_state(partition)
    assert state is not None and state.leader_id == 1 and state.voted_id == -1, theirs
    leader = LeaderState(state.leader_epoch, 0, frozenset({1}), 0, 0)
    assert election_to_file(leader.election(1)).to_json() == theirs
    resigned = ResignedState(state.leader_epoch, 0, frozenset(), ())
    assert election_to_file(resigned.election(1)).to_json() == theirs


def test_our_reader_reads_kafka_dir(kafka_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(kafka_dir, copy)
    partition = copy / "__cluster_metadata-0"
    meta = read_meta_properties(copy)
    assert meta is not None and meta.cluster_id == CLUSTER and meta.node_id == 1
    state = read_quorum_state(partition)
    assert state is not None and state.leader_id == 1 and state.data_version == 1
    kafka_epochs = parse_checkpoint((partition / "leader-epoch-checkpoint").read_text())
    log = MetadataLog.open(partition, LogConfig())
    try:
        assert log.recovery.truncated_bytes == 0, log.recovery.reasons
        # Kafka's sparse offset index (one entry per 4096 bytes) is the one we compute
        assert (partition / "00000000000000000000.index").stat().st_size > 0
        assert log.recovery.rebuilt_indexes == []
        assert log.log_end_offset > 3
        assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [
            (e.epoch, e.start_offset) for e in kafka_epochs
        ]
        assert log.last_fetched_epoch() == state.leader_epoch
        batches = list(iter_valid_batches(log.read(0, 1 << 30).records))
        assert batches[0].is_control and batches[-1].next_offset == log.log_end_offset
        records = [r for b in batches for r in b]
        assert [r.offset for r in records] == list(range(log.log_end_offset))
        assert log.snapshots and log.snapshots[0].offset == 0  # the bootstrap checkpoint
    finally:
        log.close()
    # what our replica open writes for partition.metadata is what Kafka wrote
    assert (partition / "partition.metadata").read_text() == (
        f"version: 0\ntopic_id: {METADATA_TOPIC_ID}"
    )
    snap = read_snapshot(partition / "00000000000000000000-0000000000.checkpoint")
    assert snap.voters is not None and snap.voters.voters[0].voter_directory_id == meta.directory_id
    # our recovery never rewrote Kafka's log bytes
    orig = kafka_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    assert (partition / "00000000000000000000.log").read_bytes() == orig.read_bytes()


def test_dump_log_matches_kafka_on_kafka_dir(kafka_classpath: str, kafka_dir: Path) -> None:
    partition = kafka_dir / "__cluster_metadata-0"
    files = sorted(partition.glob("*.log")) + sorted(partition.glob("*.checkpoint"))
    files.append(kafka_dir / "bootstrap.checkpoint")
    args = ["--deep-iteration", "--files", ",".join(map(str, files))]
    out = run_kafka_class(kafka_classpath, "org.apache.kafka.tools.DumpLogSegments", args).stdout
    theirs = [x for x in out.splitlines() if x and not x.startswith("[")]
    ours: list[str] = []
    for f in files:
        counts = dump_file(f, deep_iteration=True, emit=ours.append)
        assert counts["invalid_batches"] == 0 and counts["invalid_bytes"] == 0
    # Data records of a real controller are metadata records: without --print-data-log both
    # tools print only their framing, so the outputs are comparable line for line.
    assert ours == theirs
    assert os.path.getsize(files[0]) > 0


def test_kafka_continues_a_log_we_wrote(kafka_classpath: str, tmp_path: Path) -> None:
    """Kafka's controller opens a segment written by our storage (a LeaderChange control batch
    at epoch 3 with KRaftVersion and Voters, as our leader would write it), keeps it byte for
    byte, and appends after it."""
    cfg = _write_config(tmp_path)
    format_storage(ServerConfig.load(cfg), CLUSTER, standalone=True)
    partition = tmp_path / "meta" / "__cluster_metadata-0"
    voters = read_snapshot(partition / "00000000000000000000-0000000000.checkpoint").voters
    ours = MetadataLog.open(partition, LogConfig())
    lc = LeaderChangeMessage(
        version=0,
        leader_id=1,
        voters=[LeaderChangeMessage.Voter(voter_id=1)],
        granting_voters=[LeaderChangeMessage.Voter(voter_id=1)],
    )
    batch = leader_change_batch(
        0, 3, lc, timestamp_ms=int(time.time() * 1000),
        kraft_version=KRaftVersionRecord(version=0, kraft_version=1), voters=voters,
    )  # fmt: skip
    ours.append_as_leader(batch, 3)
    ours.flush()
    ours.close()
    write_quorum_state(partition, QuorumStateFile(leader_id=1, leader_epoch=3, voted_id=1))
    segment = partition / "00000000000000000000.log"
    written = segment.read_bytes()

    _run_controller(kafka_classpath, tmp_path, cfg, len(written) + 500)

    assert segment.read_bytes()[: len(written)] == written
    state = read_quorum_state(partition)
    assert state is not None and state.leader_epoch > 3
    log = MetadataLog.open(partition, LogConfig())
    try:
        assert log.recovery.truncated_bytes == 0
        assert [e.epoch for e in log.epoch_cache.entries][:2] == [3, state.leader_epoch]
        batches = list(iter_valid_batches(log.read(0, 1 << 20).records))
        assert batches[0].base_offset == 0 and batches[0].partition_leader_epoch == 3
        assert batches[1].base_offset == 3 and batches[1].is_control
    finally:
        log.close()


def test_kafka_written_log_is_served_byte_identical(kafka_classpath: str, tmp_path: Path) -> None:
    """Issue 13: a log written by a Kafka 4.3.1 controller formatted with
    `--initial-controllers` (kraft.version 1: its epoch-start batches hold LeaderChange +
    KRaftVersion + Voters) is loaded by our node, which serves it through Fetch byte for byte."""
    import asyncio

    from metaquorum.net.connection import KafkaConnection
    from metaquorum.protocol.api_keys import ApiKeys
    from metaquorum.protocol.messages import FetchRequestData, FetchResponseData
    from metaquorum.runtime.config import load_config
    from metaquorum.runtime.node import NodeRuntime

    cfg = _write_config(tmp_path)
    port = int(cfg.read_text().split("listeners=CONTROLLER://127.0.0.1:")[1].split()[0])
    directory = "4Xl3RWGdSe2d5n7RdqGzWg"
    run_kafka_class(kafka_classpath, "kafka.tools.StorageTool", [
        "format", "-c", str(cfg), "-t", CLUSTER,
        "--initial-controllers", f"1@127.0.0.1:{port}:{directory}",
    ])  # fmt: skip
    _run_controller(kafka_classpath, tmp_path, cfg, 3000)
    partition = tmp_path / "meta" / "__cluster_metadata-0"
    written = (partition / "00000000000000000000.log").read_bytes()
    kinds = {b.is_control for b in iter_valid_batches(written)}
    assert kinds == {True, False}  # control and data batches, as Kafka wrote them

    ours = tmp_path / "ours.properties"
    ours.write_text(
        "process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.quorum.voters=1@127.0.0.1:{port}\nmetadata.log.dir={tmp_path / 'meta'}\n"
    )

    async def serve_and_fetch() -> bytes:
        runtime = NodeRuntime(load_config(ours))
        await runtime.start()
        try:
            conn = KafkaConnection("127.0.0.1", port)
            partition_req = FetchRequestData.FetchPartition(
                partition=0, fetch_offset=0, last_fetched_epoch=0, current_leader_epoch=-1
            )
            request = FetchRequestData(
                replica_state=FetchRequestData.ReplicaState(replica_id=-1),
                max_wait_ms=0,
                max_bytes=len(written) * 2,
                topics=[FetchRequestData.FetchTopic(
                    topic="__cluster_metadata", topic_id=METADATA_TOPIC_ID,
                    partitions=[partition_req],
                )],
            )  # fmt: skip
            got = b""
            deadline = time.monotonic() + 20
            while len(got) < len(written) and time.monotonic() < deadline:
                response = await conn.request(ApiKeys.FETCH, 17, request, 5)
                assert isinstance(response, FetchResponseData)
                got = response.responses[0].partitions[0].records or b""
                await asyncio.sleep(0.1)
            await conn.close()
            return got
        finally:
            await runtime.shutdown()

    served = asyncio.run(serve_and_fetch())
    assert served[: len(written)] == written

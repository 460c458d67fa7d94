"""Opening a replica's directory: foreign and unformatted directories are refused clearly;
the node-facing calls work end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from metaquorum.protocol.records import iter_valid_batches
from metaquorum.protocol.types import Uuid
from metaquorum.storage.formatter import ServerConfig, format_storage
from metaquorum.storage.log import LogConfig
from metaquorum.storage.quorum_state import QuorumStateFile
from metaquorum.storage.replica import StorageError, open_replica_storage
from metaquorum.storage.snapshot_records import read_snapshot
from metaquorum.storage.snapshots import OffsetAndEpoch

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
FAST = LogConfig(fsync=False)


@pytest.fixture
def formatted(tmp_path: Path) -> Path:
    cfg = tmp_path / "server.properties"
    cfg.write_text(
        "process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://localhost:9093\nmetadata.log.dir={tmp_path / 'meta'}\n"
    )
    format_storage(ServerConfig.load(cfg), CLUSTER, standalone=True)
    return tmp_path / "meta"


def test_refuses_unformatted_and_foreign(tmp_path: Path, formatted: Path) -> None:
    with pytest.raises(StorageError, match="not formatted; run `metaquorum storage format`"):
        open_replica_storage(tmp_path / "empty", node_id=1, config=FAST)
    with pytest.raises(StorageError, match=r"node\.id 1 but this node is 2"):
        open_replica_storage(formatted, node_id=2, config=FAST)
    with pytest.raises(StorageError, match="belongs to another cluster"):
        open_replica_storage(formatted, node_id=1, cluster_id=str(Uuid.random()), config=FAST)
    assert not (formatted / "__cluster_metadata-0" / "00000000000000000000.log").exists()


def test_node_calls(formatted: Path) -> None:
    st = open_replica_storage(formatted, node_id=1, cluster_id=CLUSTER, config=FAST)
    assert (st.partition_dir / "partition.metadata").read_text() == (
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    )
    assert st.log.latest_snapshot_id() == OffsetAndEpoch(0, 0)  # the bootstrap checkpoint
    assert st.read_election_state() is None
    st.write_election_state(QuorumStateFile(leader_id=-1, leader_epoch=1, voted_id=1))
    st.log.append_records_as_leader([b"a", b"b"], 1, timestamp_ms=1)
    assert st.log.flush() == 2
    w = st.snapshot_writer(OffsetAndEpoch(2, 1), last_contained_log_timestamp=1, timestamp_ms=2)
    w.append([b"state"])
    w.freeze()
    st.log.snapshot_frozen(OffsetAndEpoch(2, 1))
    with st.snapshot_reader(OffsetAndEpoch(2, 1)) as r:
        raw = r.read(0, 10_000)
    assert len(list(iter_valid_batches(raw))) == 3
    st.close()
    again = open_replica_storage(formatted, node_id=1, config=FAST)
    assert again.read_election_state() == QuorumStateFile(-1, 1, 1)
    assert again.log.log_end_offset == 2
    assert again.log.snapshots == [OffsetAndEpoch(0, 0), OffsetAndEpoch(2, 1)]
    snap = read_snapshot(again.partition_dir / "00000000000000000002-0000000001.checkpoint")
    assert [r.value for r in snap.records] == [b"state"]
    with pytest.raises(StorageError, match="no snapshot"):
        again.snapshot_reader(OffsetAndEpoch(9, 9))
    again.close()

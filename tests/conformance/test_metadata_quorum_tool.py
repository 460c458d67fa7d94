"""Kafka 4.3.1's own `MetadataQuorumCommand --bootstrap-controller` describes our running
quorum, and its output agrees with `metaquorum quorum describe` (reference §6.2-§6.4); Kafka's
DumpLogSegments reads the segments our running nodes wrote."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import Endpoint
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.storage.meta_properties import read_meta_properties

from tests.conformance.conftest import run_kafka_class
from tests.integration.quorum_fixture import our_cli, running_quorum

pytestmark = pytest.mark.conformance

TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"
TIMING = ("MaxFollowerLagTimeMs:",)


def _status_fields(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        label, _, value = line.partition(" ")
        out[label] = value.strip()
        assert line.startswith(label.ljust(24)) or len(label) >= 24, line
    return out


def _replication_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    for line in lines:
        assert line.endswith("\t"), repr(line)
    rows = [[c.strip() for c in line.split("\t")[:-1]] for line in lines]
    # NodeId, DirectoryId, LogEndOffset, Lag, (timestamps), Status
    return [[r[0], r[1], r[2], r[3], r[6]] for r in rows]


async def _append(q: LocalQuorum, n: int) -> None:
    c = LogClient([Endpoint("127.0.0.1", x.port) for x in q.nodes.values()])
    try:
        for i in range(n):
            await c.append([b"key%d=value%d" % (i % 10, i)])
    finally:
        await c.close()


def test_kafka_metadata_quorum_tool_describes_our_quorum(
    tmp_path: Path, kafka_classpath: str
) -> None:
    extra = {"metadata.log.max.record.bytes.between.snapshots": "1500"}
    with running_quorum(tmp_path, extra=extra, observers=1) as q:
        leader, epoch = q.wait_for_leader(30)
        asyncio.run(_append(q, 200))  # data batches, and a snapshot on every node
        time.sleep(1.5)  # let every follower and the observer fetch again (LEO and HW settle)
        boot = q.nodes[1 if leader != 1 else 2].address  # bootstrap through a follower
        kafka_status = run_kafka_class(
            kafka_classpath, TOOL, ["--bootstrap-controller", boot, "describe", "--status"]
        )
        ours_status = our_cli("quorum", "--bootstrap-controller", boot, "describe", "--status")
        assert ours_status.returncode == 0, ours_status.stderr
        k, o = _status_fields(kafka_status.stdout), _status_fields(ours_status.stdout)
        assert set(k) == set(o), (kafka_status.stdout, ours_status.stdout)
        for label in k:
            if label not in TIMING:
                assert k[label] == o[label], (label, kafka_status.stdout, ours_status.stdout)
        assert k["ClusterId:"] == q.cluster_id
        assert k["LeaderId:"] == str(leader)
        assert k["LeaderEpoch:"] == str(epoch)
        assert int(k["HighWatermark:"]) >= 201  # LeaderChange + 200 appended records
        for nid in q.voter_ids:
            assert (
                f'"id": {nid}, "endpoints": ["CONTROLLER://{q.nodes[nid].address}"]'
                in (k["CurrentVoters:"])
            )

        kafka_rep = run_kafka_class(
            kafka_classpath, TOOL, ["--bootstrap-controller", boot, "describe", "--replication"]
        )
        ours_rep = our_cli("quorum", "--bootstrap-controller", boot, "describe", "--replication")
        assert ours_rep.returncode == 0, ours_rep.stderr
        assert _replication_rows(kafka_rep.stdout) == _replication_rows(ours_rep.stdout), (
            kafka_rep.stdout,
            ours_rep.stdout,
        )
        statuses = [r[-1] for r in _replication_rows(kafka_rep.stdout)[1:]]
        assert statuses == ["Leader", "Follower", "Follower", "Observer"]
        # An observer reports its directory id in Fetch (KIP-853, as Kafka's replicas do), so
        # Kafka's tool prints it beside the id.
        observer_dir = read_meta_properties(q.nodes[4].directory)
        assert observer_dir is not None and observer_dir.directory_id is not None
        assert (
            k["CurrentObservers:"] == f'[{{"id": 4, "directoryId": "{observer_dir.directory_id}"}}]'
        )

    # After a clean stop: Kafka's DumpLogSegments reads every node's segments and snapshots.
    files = []
    for node in q.nodes.values():
        part = node.directory / "__cluster_metadata-0"
        files += sorted(part.glob("*.log")) + sorted(part.glob("*.checkpoint"))
    assert any(f.suffix == ".checkpoint" for f in files)
    out = run_kafka_class(
        kafka_classpath,
        "org.apache.kafka.tools.DumpLogSegments",
        ["--files", ",".join(str(f) for f in files), "--deep-iteration", "--print-data-log"],
    )
    assert "isvalid: false" not in out.stdout
    assert "invalid bytes" not in out.stdout
    assert "LeaderChange" in out.stdout
    assert "SnapshotHeader" in out.stdout and "SnapshotFooter" in out.stdout
    assert "payload: value199" in out.stdout or "payload: key9=value199" in out.stdout

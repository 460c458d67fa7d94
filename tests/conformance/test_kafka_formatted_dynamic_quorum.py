"""Kafka 4.3.1's `kafka-storage format` output runs our nodes, and Kafka's
`kafka-metadata-quorum describe` lists them with their directory ids (issue 15): Kafka's
StorageTool formats node 1 `--standalone` and nodes 2 and 3 `--no-initial-controllers`; our
nodes start on those directories, 2 and 3 find the leader through
`controller.quorum.bootstrap.servers` and join by auto-join; Kafka's MetadataQuorumCommand
`describe --replication` and `--status` show three voters whose directory ids are the ones
Kafka's formatter wrote. Also: our nodes run from Kafka's `format --initial-controllers`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.storage.meta_properties import read_meta_properties

from tests.conformance.conftest import run_kafka_class
from tests.integration.quorum_fixture import FAST, wait_for

pytestmark = pytest.mark.conformance

TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"


def test_kafka_formats_our_dynamic_quorum_and_describes_it(
    tmp_path: Path, kafka_classpath: str
) -> None:
    q = LocalQuorum(
        tmp_path,
        3,
        standalone=True,
        extra={**FAST, "controller.quorum.auto.join.enable": "true"},
    )
    q.write_configs()
    for node in q.nodes.values():  # Kafka's formatter formats log.dirs too (default /tmp/...)
        with node.config_path.open("a") as f:
            f.write(f"log.dirs={node.directory}\n")
        mode = "--standalone" if node.node_id == 1 else "--no-initial-controllers"
        args = ["format", "-c", str(node.config_path), "-t", q.cluster_id, mode]
        run_kafka_class(kafka_classpath, "kafka.tools.StorageTool", args)
    dirs = {}
    for nid, node in q.nodes.items():
        meta = read_meta_properties(node.directory)
        assert meta is not None and meta.directory_id is not None
        dirs[nid] = str(meta.directory_id)
    boot = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes.values())
    try:
        q.start_all()
        q.wait_for_leader(30)

        def three_voters() -> bool:
            st = q.nodes[1].status() or {}
            return sorted(st.get("voters", [])) == [1, 2, 3]

        wait_for(three_voters, 60, "nodes 2 and 3 to join by auto-join")
        replication = run_kafka_class(
            kafka_classpath, TOOL, ["--bootstrap-controller", boot, "describe", "--replication"]
        ).stdout
        rows = [line.split() for line in replication.splitlines()[1:] if line.strip()]
        by_id = {int(r[0]): (r[1], r[-1]) for r in rows}
        assert {nid: d for nid, (d, _) in by_id.items()} == dirs
        assert sorted(status for _, status in by_id.values()) == ["Follower", "Follower", "Leader"]
        status = run_kafka_class(
            kafka_classpath, TOOL, ["--bootstrap-controller", boot, "describe", "--status"]
        ).stdout
        line = next(x for x in status.splitlines() if x.startswith("CurrentVoters:"))
        voters = json.loads(line[len("CurrentVoters:") :])
        assert {v["id"]: v["directoryId"] for v in voters} == dirs
    finally:
        q.stop_all()


def test_our_nodes_run_from_kafkas_initial_controllers_format(
    tmp_path: Path, kafka_classpath: str
) -> None:
    """Kafka's StorageTool `format --initial-controllers id@host:port:dir,...` on every node;
    our three nodes elect a leader from that bootstrap checkpoint and Kafka's describe lists
    the voters with the directory ids Kafka wrote."""
    q = LocalQuorum(tmp_path, 3, dynamic=True, extra=FAST)
    q.write_configs()
    controllers = ",".join(
        f"{i}@127.0.0.1:{q.nodes[i].port}:{q.directory_ids[i]}" for i in q.voter_ids
    )
    for node in q.nodes.values():
        with node.config_path.open("a") as f:
            f.write(f"log.dirs={node.directory}\n")
        args = ["format", "-c", str(node.config_path), "-t", q.cluster_id, "-I", controllers]
        run_kafka_class(kafka_classpath, "kafka.tools.StorageTool", args)
    boot = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes.values())
    try:
        q.start_all()
        q.wait_for_leader(30)
        status = run_kafka_class(
            kafka_classpath, TOOL, ["--bootstrap-controller", boot, "describe", "--status"]
        ).stdout
        line = next(x for x in status.splitlines() if x.startswith("CurrentVoters:"))
        voters = json.loads(line[len("CurrentVoters:") :])
        assert {v["id"]: v["directoryId"] for v in voters} == {
            i: str(q.directory_ids[i]) for i in q.voter_ids
        }
    finally:
        q.stop_all()

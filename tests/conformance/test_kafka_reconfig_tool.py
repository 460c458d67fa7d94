"""Kafka 4.3.1's own `kafka-metadata-quorum add-controller / remove-controller` reconfigure our
running quorum (KIP-853; issue 14's core on real nodes): a quorum formatted with
`--initial-controllers` gains the controller whose config the tool reads (node id, listener,
directory id from its meta.properties) and loses another; Kafka's `describe --status` shows
the new voter set and the removed voter as an observer; Kafka's DumpLogSegments reads the
KRaftVersion and Voters records our leader wrote."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from metaquorum.storage.meta_properties import read_meta_properties

from tests.conformance.conftest import run_kafka_class
from tests.integration.quorum_fixture import running_quorum, wait_for_hw_everywhere

pytestmark = pytest.mark.conformance

TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"


def _field(text: str, label: str) -> str:
    line = next(x for x in text.splitlines() if x.startswith(label))
    return line[len(label) :].strip()


def test_kafka_tool_adds_and_removes_controllers_of_our_quorum(
    tmp_path: Path, kafka_classpath: str
) -> None:
    with running_quorum(tmp_path, voters=3, observers=1, dynamic=True) as q:
        leader, _ = q.wait_for_leader(30)
        wait_for_hw_everywhere(q, 3, 20)
        boot = ",".join(f"127.0.0.1:{q.nodes[i].port}" for i in (1, 2, 3))
        meta = read_meta_properties(q.nodes[4].directory)
        assert meta is not None and meta.directory_id is not None

        added = run_kafka_class(
            kafka_classpath,
            TOOL,
            [
                "--bootstrap-controller",
                boot,
                "--command-config",
                str(q.nodes[4].config_path),
                "add-controller",
            ],
        )
        assert f"Added controller 4 with directory id {meta.directory_id}" in added.stdout

        victim = next(i for i in (1, 2, 3) if i != leader)
        removed = run_kafka_class(
            kafka_classpath,
            TOOL,
            [
                "--bootstrap-controller",
                boot,
                "remove-controller",
                "--controller-id",
                str(victim),
                "--controller-directory-id",
                str(q.directory_ids[victim]),
            ],
        )
        assert f"KRaft controller {victim} with directory id" in removed.stdout

        time.sleep(1.0)  # the removed replica fetches again, now as an observer
        status = run_kafka_class(
            kafka_classpath, TOOL, ["--bootstrap-controller", boot, "describe", "--status"]
        ).stdout
        voters = json.loads(_field(status, "CurrentVoters:"))
        assert sorted(v["id"] for v in voters) == sorted({1, 2, 3, 4} - {victim})
        four = next(v for v in voters if v["id"] == 4)
        assert four["directoryId"] == str(meta.directory_id)
        assert four["endpoints"] == [f"CONTROLLER://127.0.0.1:{q.nodes[4].port}"]
        observers = json.loads(_field(status, "CurrentObservers:"))
        assert [o["id"] for o in observers] == [victim]

    segment = q.nodes[leader].directory / "__cluster_metadata-0" / "00000000000000000000.log"
    dump = run_kafka_class(
        kafka_classpath,
        "org.apache.kafka.tools.DumpLogSegments",
        ["--files", str(segment), "--deep-iteration", "--print-data-log"],
    ).stdout
    assert "isvalid: false" not in dump and "invalid bytes" not in dump
    assert "KRaftVersion" in dump and "KRaftVoters" in dump

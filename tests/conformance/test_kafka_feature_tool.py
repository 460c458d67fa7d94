"""Kafka 4.3.1's own `kafka-features.sh` (org.apache.kafka.tools.FeatureCommand) upgrades our
static quorum to kraft.version 1 (issue 15, KIP-853): three voters from
`controller.quorum.voters` and a fourth node outside them. Kafka's `describe` reads our
ApiVersions (kraft.version supported 0-1, finalized 0), Kafka's MetadataQuorumCommand
add-controller is refused on kraft.version 0, `upgrade --feature kraft.version=1` sends
UpdateFeatures to our leader and prints Kafka's success line, `describe` then shows
FinalizedVersionLevel 1, a second upgrade is a no-op, and Kafka's add-controller then adds the
fourth node with the directory id of its meta.properties."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from metaquorum.admin.client import AdminClient
from metaquorum.admin.features import update_features
from metaquorum.net.endpoint import Endpoint
from metaquorum.storage.meta_properties import read_meta_properties

from tests.conformance.conftest import run_kafka_class
from tests.integration.quorum_fixture import running_quorum, wait_for, wait_for_hw_everywhere

pytestmark = pytest.mark.conformance

FEATURES = "org.apache.kafka.tools.FeatureCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"


def _kraft_line(describe_out: str) -> dict[str, str]:
    line = next(x for x in describe_out.splitlines() if x.startswith("Feature: kraft.version "))
    return dict(re.findall(r"(\w+): (\S+)", line))


def _dry_run_ok(endpoints: list[Endpoint]) -> bool:
    """Every voter has reported its directory id to the leader (UpdateRaftVoter)."""

    async def run() -> bool:
        client = AdminClient(endpoints, timeout_s=10)
        try:
            outcome = await update_features(client, {"kraft.version": 1}, validate_only=True)
        finally:
            await client.close()
        return outcome["kraft.version"] is None

    return asyncio.run(run())


def test_kafka_feature_tool_upgrades_our_static_quorum(
    tmp_path: Path, kafka_classpath: str
) -> None:
    with running_quorum(tmp_path, voters=3, observers=1) as q:
        q.wait_for_leader(30)
        wait_for_hw_everywhere(q, 1, 20)
        boot = ",".join(f"127.0.0.1:{q.nodes[i].port}" for i in (1, 2, 3))
        endpoints = [Endpoint("127.0.0.1", q.nodes[i].port) for i in (1, 2, 3)]

        def kafka(tool: str, *args: str, check: bool = True) -> str:
            r = run_kafka_class(
                kafka_classpath, tool, ["--bootstrap-controller", boot, *args], check=check
            )
            # stderr without the admin client's INFO logging (its config dump, app info)
            errors = [
                x
                for x in r.stderr.splitlines()
                if x and not x.startswith(("[", "\t")) and " INFO " not in x
            ]
            print(f"\n$ {tool.rsplit('.', 1)[-1]} {' '.join(args)}  (exit {r.returncode})")
            print(r.stdout + "\n".join(errors))
            return r.stdout + r.stderr

        before = _kraft_line(kafka(FEATURES, "describe"))
        assert before["SupportedMinVersion"] == "0" and before["SupportedMaxVersion"] == "1"
        assert before["FinalizedVersionLevel"] == "0"

        config = str(q.nodes[4].config_path)
        refused = kafka(QUORUM, "--command-config", config, "add-controller", check=False)
        assert "UnsupportedVersionException" in refused

        wait_for(lambda: _dry_run_ok(endpoints), 30, "every voter reported to the leader")
        assert "kraft.version can be upgraded to 1." in kafka(
            FEATURES, "upgrade", "--feature", "kraft.version=1", "--dry-run"
        )
        assert "kraft.version was upgraded to 1." in kafka(
            FEATURES, "upgrade", "--feature", "kraft.version=1"
        )
        after = _kraft_line(kafka(FEATURES, "describe"))
        assert after["FinalizedVersionLevel"] == "1"
        assert int(after["Epoch"]) >= 2  # the last committed offset: the upgrade's records in
        assert "kraft.version was upgraded to 1." in kafka(
            FEATURES, "upgrade", "--feature", "kraft.version=1"
        )  # the same version again: a no-op, as Kafka's controller answers it
        unknown = kafka(FEATURES, "upgrade", "--feature", "group.version=1", check=False)
        assert (
            "Could not upgrade group.version to 1. The update failed for all features since the "
            "following feature had an error: Invalid update version 1 for feature group.version."
        ) in unknown

        meta = read_meta_properties(q.nodes[4].directory)
        assert meta is not None and meta.directory_id is not None
        added = kafka(QUORUM, "--command-config", config, "add-controller")
        assert f"Added controller 4 with directory id {meta.directory_id}" in added
        status = kafka(QUORUM, "describe", "--status")
        line = next(x for x in status.splitlines() if x.startswith("CurrentVoters:"))
        voters = json.loads(line.split(":", 1)[1])
        assert sorted(v["id"] for v in voters) == [1, 2, 3, 4]
        for v in voters:
            own = read_meta_properties(q.nodes[v["id"]].directory)
            assert own is not None and v["directoryId"] == str(own.directory_id)

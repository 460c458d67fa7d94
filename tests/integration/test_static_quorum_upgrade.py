"""A static quorum keeps working and is upgraded to kraft.version 1 (issue 15, KIP-853), on real
processes while a client appends throughout.

Three voters from `controller.quorum.voters` (kraft.version 0: no directory ids in the voter
set, no VotersRecord) and a fourth node of the same cluster outside the voters (an observer).
Before the upgrade add-controller is refused (UNSUPPORTED_VERSION, with the fix). Then
`metaquorum features upgrade --feature kraft.version=1` (UpdateFeatures to the active controller,
as Kafka's kafka-features.sh): a dry run first, the upgrade, a repeat (a no-op); `describe`
shows FinalizedVersionLevel 1 and `quorum describe` the voters with the directory ids of their
meta.properties; UpdateFeatures sent to a follower answers NOT_CONTROLLER naming the leader.
A follower restarts on the upgraded log; then add-controller adds node 4 and
remove-controller removes a voter, and the ledger check passes (none lost, none duplicated,
order kept).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from metaquorum.net.connection import KafkaConnection
from metaquorum.net.endpoint import Endpoint
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import UpdateFeaturesRequestData, UpdateFeaturesResponseData
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.storage.meta_properties import read_meta_properties

from tests.integration.ledger import Ledger
from tests.integration.quorum_fixture import FAST, wait_for
from tests.integration.test_quorum_changes import _add, _cli, _describe, _remove, _report

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _features(q: LocalQuorum, *args: str) -> subprocess.CompletedProcess[str]:
    bootstrap = ",".join(n.address for n in q.nodes.values())
    command = [sys.executable, "-m", "metaquorum.cli.features_cmd"]
    return subprocess.run(
        [*command, "--bootstrap-controller", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _update_on(port: int, version: int) -> UpdateFeaturesResponseData:
    """UpdateFeatures kraft.version=1 sent straight to one node (no leader discovery)."""

    async def run() -> UpdateFeaturesResponseData:
        conn = KafkaConnection("127.0.0.1", port)
        request = UpdateFeaturesRequestData(
            feature_updates=[UpdateFeaturesRequestData.FeatureUpdateKey("kraft.version", 1)]
        )
        try:
            answer = await conn.request(57, version, request, 10)
        finally:
            await conn.close()
        assert isinstance(answer, UpdateFeaturesResponseData)
        return answer

    return asyncio.run(run())


def _dir_id(q: LocalQuorum, nid: int) -> str:
    meta = read_meta_properties(q.nodes[nid].directory)
    assert meta is not None and meta.directory_id is not None
    return str(meta.directory_id)


def test_static_quorum_upgraded_to_kraft_version_1_then_reconfigured(tmp_path: Path) -> None:
    q = LocalQuorum(tmp_path, 3, observers=1, extra=dict(FAST))
    q.write_configs()
    q.format()
    try:
        q.start_all()
        q.wait_for_leader(30)
        ledger = Ledger(lambda: [Endpoint("127.0.0.1", n.port) for n in q.nodes.values()]).start()
        try:
            ledger.wait_acked(20)
            assert {r.replica_id for r in _describe(q).voters} == {1, 2, 3}
            refused = _cli(q, "add-controller", "--config", str(q.nodes[4].config_path))
            assert refused.returncode == 1 and "UNSUPPORTED_VERSION" in refused.stderr, refused

            described = _features(q, "describe")
            assert described.returncode == 0, described.stderr
            assert "Feature: kraft.version" in described.stdout
            assert "FinalizedVersionLevel: 0 " in described.stdout

            leader, _ = q.wait_for_leader(30)
            follower = next(n for n in (3, 2, 1) if n != leader)
            moved = _update_on(q.nodes[follower].port, 2)
            assert (moved.error_code, moved.error_message) == (
                int(Errors.NOT_CONTROLLER),
                f"The active controller appears to be node {leader}.",
            )  # Kafka's admin client then asks DescribeCluster again and retries

            # Allowed once every voter told the leader its directory id (UpdateRaftVoter).
            wait_for(
                lambda: (
                    _features(q, "upgrade", "--feature", "kraft.version=1", "--dry-run").stdout
                    == "kraft.version can be upgraded to 1.\n"
                ),
                30,
                "a dry run of the upgrade allowed",
            )
            started = time.monotonic()
            up = _features(q, "upgrade", "--feature", "kraft.version=1")
            took = time.monotonic() - started
            assert (up.returncode, up.stdout) == (0, "kraft.version was upgraded to 1.\n"), up
            again = _features(q, "upgrade", "--feature", "kraft.version=1")
            assert again.stdout == "kraft.version was upgraded to 1.\n", again  # a no-op
            leader, _ = q.wait_for_leader(30)
            v1 = _update_on(q.nodes[leader].port, 1)  # v0-1: one result per feature
            assert (v1.error_code, v1.error_message) == (0, None)
            assert [(r.feature, r.error_code, r.error_message) for r in v1.results] == [
                ("kraft.version", 0, "NONE")
            ]
            down = _features(q, "downgrade", "--feature", "kraft.version=0")
            assert down.returncode == 1
            assert "Can't downgrade the version of this feature." in down.stdout

            described = _features(q, "describe")
            assert "FinalizedVersionLevel: 1 " in described.stdout, described.stdout
            voters = {r.replica_id: str(r.directory_id) for r in _describe(q).voters}
            assert voters == {n: _dir_id(q, n) for n in (1, 2, 3)}
            ledger.wait_acked(10)

            # A follower restarts on the upgraded log (its voters now come from the log).
            q.stop(follower)
            q.start(follower)
            ledger.wait_acked(10)

            _add(q, 4)
            ledger.wait_acked(10)
            voters = {r.replica_id: str(r.directory_id) for r in _describe(q).voters}
            assert voters == {n: _dir_id(q, n) for n in (1, 2, 3, 4)}
            leader, _ = q.wait_for_leader(30)
            gone = next(n for n in (1, 2, 3) if n != leader)
            _remove(q, gone, voters[gone])
            wait_for(
                lambda: {r.replica_id for r in _describe(q).voters} == {1, 2, 3, 4} - {gone},
                30,
                f"voter {gone} removed",
            )
            ledger.wait_acked(10)
        finally:
            ledger.stop()
        result = ledger.check()
        _report(
            "static quorum upgraded to kraft.version 1",
            upgrade_s=round(took, 2),
            acked=result.acked,
            max_gap_s=round(result.max_gap_s, 3),
        )
    finally:
        q.stop_all()

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
order kept). A second test kills the leader with the upgrade appended but not committed.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from metaquorum.core.log import EntryKind
from metaquorum.net.connection import KafkaConnection
from metaquorum.net.endpoint import Endpoint
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    ApiVersionsRequestData,
    ApiVersionsResponseData,
    UpdateFeaturesRequestData,
    UpdateFeaturesResponseData,
)
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.runtime.storage_io import load_entries
from metaquorum.storage.meta_properties import read_meta_properties
from metaquorum.storage.replica import open_replica_storage

from tests.integration.ledger import Ledger
from tests.integration.quorum_fixture import FAST, wait_for
from tests.integration.test_quorum_changes import _add, _cli, _describe, _remove, _report

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


_FEATURES_CLI = (sys.executable, "-m", "metaquorum.cli.features_cmd")
_KRAFT_1 = ("--feature", "kraft.version=1")


def _features(q: LocalQuorum, *args: str) -> subprocess.CompletedProcess[str]:
    bootstrap = ",".join(n.address for n in q.nodes.values())
    return subprocess.run(
        [*_FEATURES_CLI, "--bootstrap-controller", bootstrap, *args],
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


def _finalized_on(port: int) -> int | None:
    """kraft.version's finalized level in one node's ApiVersions v4 (0 when not finalized),
    None when the node does not answer."""

    async def run() -> int:
        conn = KafkaConnection("127.0.0.1", port)
        try:
            answer = await conn.request(18, 4, ApiVersionsRequestData("t", "1"), 5)
        finally:
            await conn.close()
        assert isinstance(answer, ApiVersionsResponseData)
        levels = {f.name: f.max_version_level for f in answer.finalized_features}
        return levels.get("kraft.version", 0)

    try:
        return asyncio.run(run())
    except (OSError, TimeoutError):
        return None


def _kraft_entries(q: LocalQuorum, nid: int) -> tuple[tuple[int, int, str], ...]:
    """(offset, epoch, kind) of the KRaftVersion and Voters records in a stopped node's log."""
    storage = open_replica_storage(q.nodes[nid].directory, node_id=nid)
    try:
        entries = load_entries(storage)
    finally:
        storage.close()
    kinds = (EntryKind.KRAFT_VERSION, EntryKind.KRAFT_VOTERS)
    return tuple((e.offset, e.epoch, e.kind.name) for e in entries if e.kind in kinds)


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


def test_leader_killed_with_the_upgrade_uncommitted(tmp_path: Path) -> None:
    """Both followers paused (SIGSTOP): the leader accepts the upgrade and appends its records
    (its ApiVersions already says kraft.version 1) but cannot commit them, so the tool waits.
    kill -9 of that leader, the followers resumed: the new leader has no upgrade and, like
    Kafka's, refuses it until every voter (the killed one included) reported to it. The killed
    node restarts, truncates its uncommitted KRaftVersion and Voters records (back to
    kraft.version 0), then the upgrade succeeds; every node reports kraft.version 1 finalized and
    the voters' directory ids; the ledger check passes."""
    # A fetch timeout long enough that the leader, its followers paused, does not resign
    # (check-quorum) before the tool's interpreter has started and sent the upgrade.
    q = LocalQuorum(tmp_path, 3, extra={**FAST, "controller.quorum.fetch.timeout.ms": "4000"})
    q.write_configs()
    q.format()
    try:
        q.start_all()
        q.wait_for_leader(30)
        ledger = Ledger(lambda: [Endpoint("127.0.0.1", n.port) for n in q.nodes.values()]).start()
        try:
            ledger.wait_acked(20)
            wait_for(
                lambda: (
                    _features(q, "upgrade", *_KRAFT_1, "--dry-run").stdout
                    == "kraft.version can be upgraded to 1.\n"
                ),
                30,
                "a dry run of the upgrade allowed",
            )
            leader, _ = q.wait_for_leader(30)
            followers = [n for n in q.nodes if n != leader]
            for nid in followers:
                q.signal(nid, signal.SIGSTOP)
            # The leader first: the tool asks it first (the paused followers would not answer).
            bootstrap = ",".join(q.nodes[n].address for n in [leader, *followers])
            upgrade = subprocess.Popen(
                [*_FEATURES_CLI, "--bootstrap-controller", bootstrap, "upgrade", *_KRAFT_1],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            wait_for(lambda: _finalized_on(q.nodes[leader].port) == 1, 20, "the upgrade appended")
            time.sleep(0.5)
            assert upgrade.poll() is None  # not answered: nothing commits
            q.kill(leader)
            for nid in followers:
                q.signal(nid, signal.SIGCONT)
            new_leader, _ = q.wait_for_leader(30, exclude={leader})
            assert _finalized_on(q.nodes[new_leader].port) == 0
            refused = _features(q, "upgrade", *_KRAFT_1)
            assert "because not all of the voters support it" in refused.stdout, refused
            ledger.wait_acked(10)  # two voters of three keep committing

            q.start(leader)  # truncates its uncommitted upgrade to the new leader's log
            wait_for(
                lambda: _features(q, "upgrade", *_KRAFT_1).returncode == 0,
                30,
                "the upgrade on the new leader",
            )
            for nid in q.nodes:
                wait_for(
                    lambda nid=nid: _finalized_on(q.nodes[nid].port) == 1,  # type: ignore[misc]
                    30,
                    f"kraft.version 1 finalized on node {nid}",
                )
            # The tool retried through the lost connection: the new leader refused it before
            # the restart, or answered it after.
            out, err = upgrade.communicate(timeout=60)
            print(f"\nthe upgrade sent to the killed leader: exit {upgrade.returncode}: {out}{err}")
            assert upgrade.returncode == 0 or "not all of the voters support it" in out
            voters = {r.replica_id: str(r.directory_id) for r in _describe(q).voters}
            assert voters == {n: _dir_id(q, n) for n in (1, 2, 3)}
            ledger.wait_acked(10)
        finally:
            ledger.stop()
        result = ledger.check()
        q.stop_all()
        # One upgrade in every log, the new leader's, at the same offsets and epoch.
        kraft = {nid: _kraft_entries(q, nid) for nid in q.nodes}
        assert len(set(kraft.values())) == 1 and len(kraft[leader]) == 2, kraft
        _report(
            "leader killed with the kraft.version upgrade uncommitted",
            acked=result.acked,
            max_gap_s=round(result.max_gap_s, 3),
        )
    finally:
        q.stop_all()

"""Real `metaquorum server start` processes on loopback (marker `integration`): election,
kill -9 of the leader, restart and catch-up, SIGTERM hand-over, foreign cluster id, and bad
frames that close one connection without harming the node. Each test is bounded in time."""

from __future__ import annotations

import re
import signal
import socket
import struct
import time
from pathlib import Path

import pytest
from metaquorum.protocol.control_records import control_records_of
from metaquorum.protocol.control_types import ControlRecordType
from metaquorum.protocol.messages import VotersRecord
from metaquorum.protocol.records import iter_batches
from metaquorum.runtime.local_quorum import LocalQuorum

from tests.integration.quorum_fixture import (
    FAST,
    our_cli,
    running_quorum,
    wait_for,
    wait_for_hw_everywhere,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_three_voters_elect_one_leader_and_agree(tmp_path: Path) -> None:
    with running_quorum(tmp_path) as q:
        leader, epoch = q.wait_for_leader(30)

        def all_follow() -> bool:
            sts = q.statuses()
            return all(
                s is not None and s["leader_id"] == leader and s["epoch"] == epoch
                for s in sts.values()
            )

        wait_for(all_follow, 10, "every node to follow the leader")
        sts = q.statuses()
        assert [s["state"] for n, s in sorted(sts.items()) if s] == [
            "leader" if n == leader else "follower" for n in sorted(sts)
        ]
        # The LeaderChange record of the epoch commits and reaches every replica.
        wait_for_hw_everywhere(q, 1, 10)
        # HTTP: /healthz, /readyz (leader known, caught up) and Kafka's raft-metrics names.
        import urllib.request

        for node in q.nodes.values():
            base = f"http://127.0.0.1:{node.http_port}"
            for path in ("/healthz", "/readyz"):
                with urllib.request.urlopen(base + path, timeout=5) as r:
                    assert r.status == 200
            with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
                metrics = r.read().decode()
            assert f"kafka_server_raft_metrics_current_leader {float(leader)}" in metrics
            assert f"kafka_server_raft_metrics_current_epoch {float(epoch)}" in metrics
            role = "leader" if node.node_id == leader else "follower"
            assert f'kafka_server_raft_metrics_current_state{{state="{role}"}} 1.0' in metrics
            # Kafka 4.3's raft-metrics set (KafkaRaftMetrics); the last two only on the leader.
            names = {
                line.split(" ")[0].split("{")[0]
                for line in metrics.splitlines()
                if line.startswith("kafka_server_raft_metrics_")
            }
            kafka = KAFKA_RAFT_METRICS - (
                set()
                if node.node_id == leader
                else {"number-of-observers", "uncommitted-voter-change"}
            )
            assert {"kafka_server_raft_metrics_" + k.replace("-", "_") for k in kafka} <= names
            assert "kafka_server_raft_metrics_number_unknown_voter_connections 0.0" in metrics
            # prometheus_client's process and GC collectors (read by the soak, docs/soak.md).
            assert 'python_gc_collections_total{generation="0"}' in metrics
            assert "process_open_fds " in metrics and "process_resident_memory_bytes " in metrics
            if node.node_id == leader:  # it campaigned: one election measured, not NaN
                assert "kafka_server_raft_metrics_uncommitted_voter_change 0.0" in metrics
                assert not re.search(r"election_latency_max nan", metrics, re.IGNORECASE)
    assert all(n.process is not None and n.process.returncode == 0 for n in q.nodes.values())


KAFKA_RAFT_METRICS = {
    "current-state",
    "current-leader",
    "current-vote",
    "current-epoch",
    "high-watermark",
    "log-end-offset",
    "log-end-epoch",
    "number-unknown-voter-connections",
    "number-of-voters",
    "number-of-observers",
    "uncommitted-voter-change",
    "commit-latency-avg",
    "commit-latency-max",
    "election-latency-avg",
    "election-latency-max",
    "fetch-records-rate",
    "append-records-rate",
    "poll-idle-ratio-avg",
}


def test_quorum_formatted_with_initial_controllers_runs_from_its_bootstrap_checkpoint(
    tmp_path: Path,
) -> None:
    """KIP-853 bootstrap: configs name only controller.quorum.bootstrap.servers; the voter set,
    directory ids and endpoints come from the checkpoint `format --initial-controllers` wrote,
    and drive the peer connections and DescribeQuorum's node list."""
    with running_quorum(tmp_path, dynamic=True) as q:
        for node in q.nodes.values():
            assert "controller.quorum.voters" not in node.config_path.read_text()
        leader, _ = q.wait_for_leader(30)
        wait_for_hw_everywhere(q, 1, 10)
        r = our_cli(
            "quorum", "--bootstrap-controller", q.nodes[leader].address, "describe", "--status"
        )
        assert r.returncode == 0, r.stderr
        for nid, node in q.nodes.items():
            assert f'"id": {nid}' in r.stdout
            assert f"CONTROLLER://127.0.0.1:{node.port}" in r.stdout
            assert f'"directoryId": "{q.directory_ids[nid]}"' in r.stdout
    # KIP-853: the first leader opened its epoch with LeaderChange + KRaftVersion + Voters in
    # one control batch (the voter set was only in the bootstrap checkpoint), on every replica.
    for node in q.nodes.values():
        segment = node.directory / "__cluster_metadata-0" / "00000000000000000000.log"
        first = next(iter_batches(segment.read_bytes()))
        kinds = [kind for kind, _ in control_records_of(first)]
        assert kinds == [
            ControlRecordType.LEADER_CHANGE,
            ControlRecordType.KRAFT_VERSION,
            ControlRecordType.KRAFT_VOTERS,
        ]
        _, voters = control_records_of(first)[2]
        assert isinstance(voters, VotersRecord)
        assert {(v.voter_id, str(v.voter_directory_id)) for v in voters.voters} == {
            (i, str(d)) for i, d in q.directory_ids.items()
        }


def test_kill_leader_elects_new_leader_and_old_leader_rejoins(tmp_path: Path) -> None:
    with running_quorum(tmp_path, extra=FAST) as q:
        old, epoch = q.wait_for_leader(30)
        q.kill(old)
        t0 = time.monotonic()
        new, new_epoch = q.wait_for_leader(20, exclude={old}, min_epoch=epoch + 1)
        failover_s = time.monotonic() - t0
        assert new != old and new_epoch > epoch
        assert failover_s < 15
        q.start(old)

        def rejoined() -> bool:
            s = q.nodes[old].status()
            lead = q.nodes[new].status()
            return (
                s is not None
                and lead is not None
                and s["leader_id"] == new
                and s["state"] == "follower"
                and s["log_end_offset"] == lead["log_end_offset"]
            )

        wait_for(rejoined, 20, "the old leader to rejoin as a follower and catch up")


def test_sigterm_leader_hands_over_faster_than_a_timeout(tmp_path: Path) -> None:
    # Long timeouts: without EndQuorumEpoch the followers would wait a whole fetch timeout.
    slow = {
        "controller.quorum.election.timeout.ms": "1000",
        "controller.quorum.fetch.timeout.ms": "4000",
    }
    with running_quorum(tmp_path, extra=slow) as q:
        old, epoch = q.wait_for_leader(30)
        time.sleep(0.5)
        t0 = time.monotonic()
        q.signal(old, signal.SIGTERM)
        new, _ = q.wait_for_leader(20, exclude={old}, min_epoch=epoch + 1)
        handover_s = time.monotonic() - t0
        rc = q.nodes[old].process.wait(10)  # type: ignore[union-attr]
        print(f"SIGTERM hand-over: {handover_s * 1000:.0f} ms (fetch timeout 4000 ms)")
        assert rc == 0
        assert new != old
        assert handover_s < 4.0, f"hand-over took {handover_s:.2f}s, not faster than a timeout"
        # one line names the signal and the state it found (e2e's roll test reads it)
        said = q.nodes[old].log_path.read_text(errors="replace")
        assert f"received SIGTERM: shutting down as Leader(epoch={epoch}" in said, said[-2000:]


def test_node_of_another_cluster_is_refused_and_nothing_truncated(tmp_path: Path) -> None:
    q = LocalQuorum(tmp_path, 3, extra=FAST)
    q.write_configs()
    q.format([1, 2])
    q.format([3], cluster_id="AAAAAAAAAAAAAAAAAAAAAB")  # another cluster
    q.start_all()
    try:
        leader, epoch = q.wait_for_leader(30, exclude={3})
        assert leader in (1, 2)
        wait_for(
            lambda: (q.nodes[leader].status() or {}).get("high_watermark", -1) >= 1,
            10,
            "the two good voters to commit the LeaderChange",
        )
        before = q.nodes[leader].status()
        assert before is not None
        time.sleep(3)  # node 3 keeps fetching and campaigning; it must never get in
        lead = q.nodes[leader].status()
        s3 = q.nodes[3].status()
        assert lead is not None and s3 is not None
        assert q.leader(exclude={3}) == (leader, epoch)  # no disruption by the foreigner
        assert s3["leader_id"] != leader  # it never learned the leader
        assert s3["log_end_offset"] == 0 and s3["high_watermark"] == -1
        ids = {r["id"]: r for r in lead.get("replicas", [])}
        assert ids[3]["log_end_offset"] == -1  # never fetched successfully
        # nothing truncated on the quorum: the log only grew
        assert lead["log_end_offset"] >= before["log_end_offset"] >= 1
        assert lead["high_watermark"] >= before["high_watermark"] >= 1
        # On the wire: a Fetch carrying another cluster id gets INCONSISTENT_CLUSTER_ID (104).
        assert _fetch_error(q.nodes[leader].port, "AAAAAAAAAAAAAAAAAAAAAB", epoch) == 104
        assert _fetch_error(q.nodes[leader].port, q.cluster_id, epoch) == 0
    finally:
        q.stop_all()


def _fetch_error(port: int, cluster_id: str, epoch: int) -> int:
    """Top-level error of a replica Fetch (replica 3, offset 0) sent with `cluster_id`."""
    import asyncio

    from metaquorum.net.connection import KafkaConnection
    from metaquorum.protocol.messages import FetchRequestData
    from metaquorum.protocol.types import Uuid

    request = FetchRequestData(
        cluster_id=cluster_id,
        replica_state=FetchRequestData.ReplicaState(replica_id=3, replica_epoch=-1),
        max_wait_ms=0,
        topics=[
            FetchRequestData.FetchTopic(
                topic="__cluster_metadata",
                topic_id=Uuid.METADATA_TOPIC_ID,
                partitions=[
                    FetchRequestData.FetchPartition(partition=0, current_leader_epoch=epoch)
                ],
            )
        ],
    )

    async def go() -> int:
        conn = KafkaConnection("127.0.0.1", port)
        try:
            r = await conn.request(1, 17, request, 5)
            return int(r.error_code)
        finally:
            await conn.close()

    return asyncio.run(go())


def _frame_probe(port: int, payload: bytes, *, partial: bool = False) -> bytes:
    """Send raw bytes; return what the server sends back before closing (b"" = closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(payload)
        if partial:
            pass
        try:
            return s.recv(65536)
        except TimeoutError:
            return b"<open>"


def test_malformed_oversized_and_slow_frames_close_only_that_connection(tmp_path: Path) -> None:
    with running_quorum(tmp_path, extra={"socket.request.max.bytes": "65536"}) as q:
        leader, epoch = q.wait_for_leader(30)
        port = q.nodes[leader].port
        # Garbage header (unknown api key 999), negative size, oversized, truncated body.
        assert _frame_probe(port, struct.pack(">ihhi", 8, 999, 0, 7)) == b""
        assert _frame_probe(port, struct.pack(">i", -5)) == b""
        assert _frame_probe(port, struct.pack(">i", 1 << 30)) == b""
        assert _frame_probe(port, struct.pack(">ihhi", 12, 55, 2, 1) + b"\xff\xff") == b""
        # Slow loris: a frame that starts but never completes is cut after the frame timeout.
        t0 = time.monotonic()
        assert _frame_probe(port, struct.pack(">i", 100) + b"\x00\x37", partial=True) == b""
        assert time.monotonic() - t0 < 15
        # The node still leads and answers Kafka clients.
        assert q.leader() == (leader, epoch)
        r = our_cli(
            "quorum", "--bootstrap-controller", q.nodes[leader].address, "describe", "--status"
        )
        assert r.returncode == 0 and f"LeaderId:               {leader}" in r.stdout

"""Our 3-voter quorum for the benchmark: started with `LocalQuorum` (as `make run` does).

Role: format and start 3 `metaquorum server start` processes with Kafka's default timeouts and
fsync on; find the leader; build the Produce v9 request frame the Go load generator sends; poll
DescribeQuorum to time a failover (kill -> a leader of a newer epoch reporting a high watermark,
which our core, like Kafka's LeaderState, exposes only once the first record of its epoch is
committed: KIP-595).

Invariants: `stop()` stops every process it started; CPU is summed over all incarnations.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from metaquorum.net.connection import KafkaConnection
from metaquorum.net.wire import encode_request
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.messages import DescribeQuorumRequestData, DescribeQuorumResponseData
from metaquorum.protocol.records import build_batch
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.runtime.produce import (
    PRODUCE_API_KEY,
    PRODUCE_VERSION,
    ProducePartition,
    ProduceRequest,
)

from bench.common import cpu_seconds
from bench.peers.kafka import SUMMARY, Summary
from bench.tls import BenchTls

TOPIC = "__cluster_metadata"


def produce_frame(record_size: int) -> bytes:
    """One Produce v9 request (acks=-1, one record of `record_size` bytes), size-prefixed;
    bytes 8..12 are the correlation id the load generator rewrites."""
    batch = build_batch(0, -1, [b"x" * record_size], timestamp_ms=int(time.time() * 1000))
    request = ProduceRequest(
        acks=-1, timeout_ms=10000, topics=[(TOPIC, [ProducePartition(0, batch)])]
    )
    return encode_request(PRODUCE_API_KEY, PRODUCE_VERSION, 1, request, "bench")


def describe_quorum_request(topic: str) -> DescribeQuorumRequestData:
    return DescribeQuorumRequestData(
        topics=[
            DescribeQuorumRequestData.TopicData(
                topic_name=topic,
                partitions=[DescribeQuorumRequestData.PartitionData(partition_index=0)],
            )
        ]
    )


async def leader_view(conn: KafkaConnection, topic: str = TOPIC) -> tuple[int, int, int] | None:
    """(leader id, epoch, high watermark) from a node that answers as leader, else None."""
    try:
        r = await conn.request(ApiKeys.DESCRIBE_QUORUM, 2, describe_quorum_request(topic), 0.5)
    except (ConnectionError, TimeoutError, OSError):
        return None
    if not isinstance(r, DescribeQuorumResponseData) or r.error_code != 0 or not r.topics:
        return None
    p = r.topics[0].partitions[0]
    if p.error_code != 0:
        return None
    return p.leader_id, p.leader_epoch, p.high_watermark


class OursCluster:
    name = "ours"

    def __init__(
        self,
        base: Path,
        extra: dict[str, str] | None = None,
        *,
        perf_test: tuple[int, int] | None = None,
        tls: BenchTls | None = None,
    ) -> None:
        """`perf_test=(throughput, record_size)` runs `metaquorum perf-test` instead of
        `metaquorum server start` (the leader generates its own load, as TestRaftServer);
        `tls`: the controller listener on mutual TLS (bench/tls.py), the harness's own
        DescribeQuorum polls and the load generator too."""
        shutil.rmtree(base, ignore_errors=True)
        self.tls = tls
        if tls is not None:
            extra = {**(extra or {}), **tls.server_props()}
        self.quorum = LocalQuorum(base, 3, extra=extra)
        self.cpu_dead: dict[int, float] = {}
        self.perf_test = perf_test

    def _start_node(self, nid: int) -> None:
        if self.perf_test is None:
            self.quorum.start(nid)
            return
        node = self.quorum.nodes[nid]
        throughput, size = self.perf_test
        argv = [sys.executable, "-m", "metaquorum.cli.main", "perf-test"]
        argv += ["--config", str(node.config_path), "--throughput", str(throughput)]
        argv += ["--record-size", str(size)]
        with node.log_path.open("ab") as log:
            node.process = subprocess.Popen(
                argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )

    def start(self) -> None:
        self.quorum.write_configs()
        self.quorum.format()
        for nid in self.quorum.nodes:
            self._start_node(nid)
        self.quorum.wait_for_leader(30)

    def endpoints(self) -> list[str]:
        return [n.address for n in self.quorum.nodes.values()]

    def leader(self) -> tuple[int, int]:
        return self.quorum.wait_for_leader(30)

    def endpoints_leader_first(self) -> list[str]:
        lid, _ = self.leader()
        others = [n.address for i, n in self.quorum.nodes.items() if i != lid]
        return [self.quorum.nodes[lid].address, *others]

    def _client(self) -> Callable[[], ssl.SSLContext] | None:
        return None if self.tls is None else self.tls.client()

    def goload_args(self) -> list[str]:
        return [] if self.tls is None else self.tls.goload_args()

    def cpu(self) -> float:
        total = sum(self.cpu_dead.values())
        for n in self.quorum.nodes.values():
            if n.process is not None and n.process.poll() is None:
                total += cpu_seconds(n.process.pid)
        return total

    def pids(self) -> dict[int, int]:
        return {
            i: n.process.pid
            for i, n in self.quorum.nodes.items()
            if n.process is not None and n.process.poll() is None
        }

    def _bank_cpu(self, nid: int) -> None:
        proc = self.quorum.nodes[nid].process
        if proc is not None and proc.poll() is None:
            self.cpu_dead[nid] = self.cpu_dead.get(nid, 0.0) + cpu_seconds(proc.pid)

    def kill(self, nid: int) -> float:
        self._bank_cpu(nid)
        t = time.time()
        self.quorum.kill(nid)
        return t

    def terminate(self, nid: int) -> float:
        """SIGTERM (graceful: the leader resigns with EndQuorumEpoch); returns the signal time."""
        import signal

        self._bank_cpu(nid)
        t = time.time()
        self.quorum.signal(nid, signal.SIGTERM)
        return t

    def wait_exit(self, nid: int, timeout_s: float = 10) -> None:
        proc = self.quorum.nodes[nid].process
        if proc is not None:
            proc.wait(timeout_s)

    def restart(self, nid: int) -> None:
        self._start_node(nid)

    def last_summary(self, nid: int) -> Summary | None:
        """The last TestRaftServer-style line node `nid` printed (perf-test)."""
        text = self.quorum.nodes[nid].log_path.read_text(errors="replace")
        found = SUMMARY.findall(text)
        return Summary(*(float(x) for x in found[-1])) if found else None

    async def high_watermark(self, leader: int, epoch: int) -> int | None:
        conn = KafkaConnection(
            "127.0.0.1", self.quorum.nodes[leader].port, connect_timeout_s=1, tls=self._client()
        )
        try:
            view = await leader_view(conn)
        finally:
            await conn.close()
        return view[2] if view is not None and view[1] == epoch and view[2] >= 0 else None

    async def wait_new_epoch_commit(
        self, old_epoch: int, exclude: int, timeout_s: float = 30
    ) -> float | None:
        """Poll the survivors every 5 ms: the wall time at which one answers DescribeQuorum as
        leader of an epoch > old_epoch with a high watermark (its epoch's first commit)."""
        conns = [
            KafkaConnection(
                "127.0.0.1", n.port, connect_timeout_s=0.5, backoff_max_ms=50, tls=self._client()
            )
            for i, n in self.quorum.nodes.items()
            if i != exclude
        ]
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                views = await asyncio.gather(*(leader_view(c) for c in conns))
                now = time.time()
                for v in views:
                    if v is not None and v[1] > old_epoch and v[2] >= 0:
                        return now
                await asyncio.sleep(0.005)
            return None
        finally:
            for c in conns:
                await c.close()

    async def wait_caught_up(self, nid: int, timeout_s: float = 30) -> None:
        """Wait until node `nid` is up and its end offset is within 1,000 of the leader's HW."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            st = self.quorum.nodes[nid].status(0.5)
            lead = self.quorum.leader()
            if st is not None and lead is not None:
                lst = self.quorum.nodes[lead[0]].status(0.5) or {}
                hw = int(lst.get("high_watermark", -1))
                if int(st.get("high_watermark", -1)) >= max(0, hw - 1000):
                    return
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        self.quorum.stop_all()

"""Apache Kafka's own KRaft for the benchmark: 3 `kafka.tools.TestRaftServer` voters (4.3.1 jars
from Maven Central via scripts/kafka-jars.sh), static `controller.quorum.voters`, Kafka's default
quorum timeouts, log flushed on every append as KRaft does (KIP-595).

Role: start/kill/restart voters (`--throughput`, `--record-size`: the leader's own workload),
read what they print: the `Throughput (bytes/second): ..., Latency (ms): ... p75 ... p99 ...
p999` lines, and from their timestamped INFO logs the leader of each epoch and the instant its
LeaderState set the high watermark "for the first time for epoch E" (the first commit of the
epoch: the failover end point). The committed offset is read independently with a raft Fetch
(replica id -1, an observer's fetch) returning the leader's high watermark.

Invariants: every JVM started is stopped; log parsing is incremental (offset per file).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from metaquorum.net.connection import KafkaConnection
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.messages import FetchRequestData, FetchResponseData
from metaquorum.protocol.types import Uuid

from bench.common import REPO, Proc, free_ports

TOPIC = "__raft_performance_test"
TOPIC_ID = Uuid.from_bytes(bytes(15) + b"\x02")  # TestRaftServer: new Uuid(0L, 2L)
LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}) ")
HW_FIRST = re.compile(
    r"LeaderState - \[RaftManager id=(\d+)\] High watermark set to .* for the "
    r"first time for epoch (\d+)"
)
FOLLOWER_HW = re.compile(
    r"FollowerState - \[RaftManager id=(\d+)\] High watermark set to .* for the first time for "
    r"epoch (\d+)"
)
SUMMARY = re.compile(
    r"Throughput \(bytes/second\): ([\d.]+), Latency \(ms\): ([\d.NaInf]+) p75 ([\d.NaInf]+) "
    r"p99 ([\d.NaInf]+) p999"
)


def kafka_lib() -> Path:
    out = subprocess.run(
        [str(REPO / "scripts" / "kafka-jars.sh")], check=True, capture_output=True, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


@dataclass
class Summary:
    bytes_per_s: float
    p75_ms: float
    p99_ms: float
    p999_ms: float


class LogWatcher:
    """Reads a growing log file from where it stopped last time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0
        self.tail = b""

    def lines(self) -> list[str]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.pos)
                data = f.read()
        except OSError:
            return []
        self.pos += len(data)
        data = self.tail + data
        *complete, self.tail = data.split(b"\n")
        return [c.decode("utf-8", "replace") for c in complete]


class TestRaftCluster:
    name = "kafka"

    def __init__(self, base: Path, throughput: int, record_size: int) -> None:
        shutil.rmtree(base, ignore_errors=True)
        self.base = base
        lib = kafka_lib()
        ports = free_ports(3)
        self.ports = {i: ports[i - 1] for i in (1, 2, 3)}
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in self.ports.items())
        self.procs: dict[int, Proc] = {}
        self.watchers: dict[int, LogWatcher] = {}
        self.first_commit: dict[int, tuple[int, float]] = {}  # epoch -> (leader, wall time)
        self.summaries: dict[int, list[Summary]] = {}
        self.follower_hw: set[tuple[int, int]] = set()  # (node, epoch) a follower learned a HW
        for i, port in self.ports.items():
            d = base / f"n{i}"
            d.mkdir(parents=True)
            cfg = d / "server.properties"
            cfg.write_text(
                f"node.id={i}\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n"
                f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.quorum.voters={voters}\n"
                f"log.dirs={d / 'data'}\nmetadata.log.dir={d / 'data'}\n"
            )
            argv = [
                "java",
                "-Xms256m",
                "-Xmx1g",
                "-XX:+UseG1GC",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                "-cp",
                f"{lib}/*",
                "kafka.tools.TestRaftServer",
                "--config",
                str(cfg),
                "--replica-directory-id",
                str(Uuid.random()),
                "--throughput",
                str(throughput),
                "--record-size",
                str(record_size),
            ]
            self.procs[i] = Proc(f"kafka-{i}", argv, d / "out.log")
            self.watchers[i] = LogWatcher(d / "out.log")
            self.summaries[i] = []

    def start(self) -> None:
        for p in self.procs.values():
            p.start()
        self.wait_leader(60)

    def poll_logs(self) -> None:
        for i, w in self.watchers.items():
            for line in w.lines():
                m = HW_FIRST.search(line)
                if m is not None:
                    ts = LOG_TS.match(line)
                    t = (
                        datetime.strptime(ts.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
                        if ts
                        else time.time()
                    )
                    self.first_commit.setdefault(int(m.group(2)), (int(m.group(1)), t))
                    continue
                f = FOLLOWER_HW.search(line)
                if f is not None:
                    self.follower_hw.add((int(f.group(1)), int(f.group(2))))
                    continue
                s = SUMMARY.search(line)
                if s is not None:
                    vals = [float(x) for x in s.groups()]
                    self.summaries[i].append(Summary(*vals))

    def current(self) -> tuple[int, int] | None:
        """(leader, epoch) of the newest epoch whose leader committed and is still alive."""
        self.poll_logs()
        for epoch in sorted(self.first_commit, reverse=True):
            leader, _ = self.first_commit[epoch]
            if self.procs[leader].alive():
                return leader, epoch
        return None

    def wait_leader(self, timeout_s: float = 60, min_epoch: int = 0) -> tuple[int, int]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            cur = self.current()
            if cur is not None and cur[1] > min_epoch:
                return cur
            time.sleep(0.02)
        raise TimeoutError("TestRaftServer: no leader")

    async def wait_new_epoch_commit(
        self, old_epoch: int, exclude: int, timeout_s: float = 60
    ) -> float | None:
        """Wall time at which a leader of an epoch > old_epoch set its first high watermark
        (from its own log timestamp, millisecond resolution)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.poll_logs()
            newer = [e for e in self.first_commit if e > old_epoch]
            if newer:
                return self.first_commit[min(newer)][1]
            await asyncio.sleep(0.02)
        return None

    async def high_watermark(self, leader: int, epoch: int) -> int | None:
        conn = KafkaConnection("127.0.0.1", self.ports[leader], connect_timeout_s=1)
        request = FetchRequestData(
            cluster_id=None,
            replica_id=-1,
            replica_state=FetchRequestData.ReplicaState(replica_id=-1),
            max_wait_ms=0,
            max_bytes=1,
            topics=[
                FetchRequestData.FetchTopic(
                    topic=TOPIC,
                    topic_id=TOPIC_ID,
                    partitions=[
                        FetchRequestData.FetchPartition(
                            partition=0,
                            current_leader_epoch=epoch,
                            fetch_offset=0,
                            last_fetched_epoch=0,
                            partition_max_bytes=1,
                        )
                    ],
                )
            ],
        )
        try:
            r = await conn.request(ApiKeys.FETCH, 17, request, 2.0)
        except (ConnectionError, TimeoutError, OSError):
            return None
        finally:
            await conn.close()
        if not isinstance(r, FetchResponseData) or not r.responses:
            return None
        p = r.responses[0].partitions[0]
        return int(p.high_watermark) if p.high_watermark >= 0 else None

    def last_summary(self, leader: int) -> Summary | None:
        self.poll_logs()
        s = self.summaries.get(leader) or []
        return s[-1] if s else None

    def wait_rejoined(self, nid: int, epoch: int, timeout_s: float = 60) -> bool:
        """Until restarted node `nid` follows epoch `epoch` (or a later one) and has learned its
        high watermark there."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.poll_logs()
            if any(n == nid and e >= epoch for n, e in self.follower_hw):
                return True
            time.sleep(0.05)
        return False

    def cpu(self) -> float:
        return sum(p.cpu() for p in self.procs.values())

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values() if p.alive()]

    def kill(self, i: int) -> float:
        return self.procs[i].kill()

    def restart(self, i: int) -> None:
        self.procs[i].start()

    def stop(self) -> None:
        for p in self.procs.values():
            p.stop(15)

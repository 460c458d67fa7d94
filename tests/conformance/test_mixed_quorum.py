"""A mixed quorum (issue 15): Kafka 4.3.1's own raft client, `kafka.tools.TestRaftServer` (its
KafkaRaftClient with a raw-bytes state machine), votes beside two of our nodes.

TestRaftServer replicates a hard-coded topic, `__raft_performance_test` with topic id
Uuid(0, 2), so our nodes run with `metaquorum.raft.topic=__raft_performance_test` (the only
other topic the setting accepts), and cluster id AAAAAAAAAAAAAAAAAAAAAA (TestRaftServer's is
Uuid.ZERO_UUID). The quorum is formed with `--initial-controllers` (our
formatter writes the bootstrap checkpoint TestRaftServer reads). Leadership is moved by
kill -9 of whichever replica leads until both kinds have led and been killed; our client
appends while one of ours leads (TestRaftServer appends its own zero-filled records while it
leads); at the end every acknowledged append is at its offset in the committed log read from
the leader, and every replica's log - ours and Kafka's, read from disk - holds the same
committed records. Then our CLI adds a second TestRaftServer as a voter and removes it.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest
from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import Endpoint
from metaquorum.protocol.records import iter_batches
from metaquorum.protocol.types import TEST_RAFT_TOPIC, Uuid
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.storage.formatter import ServerConfig, format_storage
from metaquorum.storage.meta_properties import read_meta_properties

from tests.integration.quorum_fixture import FAST, our_cli, wait_for

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(400)]

RECORD_SIZE = 64
KAFKA_NODES = (3, 4)  # 3: an initial voter; 4: joins later through our CLI


class Mixed:
    def __init__(self, base: Path, classpath: str) -> None:
        self.q = LocalQuorum(
            base,
            4,
            cluster_id=str(Uuid.ZERO),  # TestRaftServer's KafkaRaftManager: Uuid.ZERO_UUID
            dynamic=True,
            extra={**FAST, "metaquorum.raft.topic": TEST_RAFT_TOPIC.name},
        )
        self.q.voter_ids = [1, 2, 3]
        self.q.directory_ids = {i: self.q.directory_ids[i] for i in (1, 2, 3)}
        self.classpath = classpath
        self.java: dict[int, subprocess.Popen[bytes]] = {}
        self.q.write_configs()
        self.q.format([1, 2, 3])
        cfg = ServerConfig.load(self.q.nodes[4].config_path)
        format_storage(cfg, self.q.cluster_id, no_initial_controllers=True)

    def dir_id(self, nid: int) -> str:
        meta = read_meta_properties(self.q.nodes[nid].directory)
        assert meta is not None and meta.directory_id is not None
        return str(meta.directory_id)

    def start(self, nid: int) -> None:
        if nid not in KAFKA_NODES:
            self.q.start(nid)
            return
        node = self.q.nodes[nid]
        log = (node.config_path.parent / "kafka.log").open("ab")
        self.java[nid] = subprocess.Popen(
            [
                "java",
                "-Xms128m",
                "-Xmx512m",
                "-cp",
                self.classpath,
                "kafka.tools.TestRaftServer",
                "--config",
                str(node.config_path),
                "--replica-directory-id",
                self.dir_id(nid),
                "--throughput",
                "20",
                "--record-size",
                str(RECORD_SIZE),
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()

    def kill(self, nid: int) -> None:
        if nid in KAFKA_NODES:
            self.java[nid].kill()
            self.java[nid].wait(30)
        else:
            self.q.kill(nid)

    def leader(self, exclude: set[int] = frozenset()) -> tuple[int, int] | None:  # type: ignore[assignment]
        """(leader, epoch) as our live nodes agree on it."""
        seen = set()
        for nid in (1, 2):
            if nid in exclude:
                continue
            st = self.q.nodes[nid].status()
            if st and st["leader_id"] >= 0 and st["leader_id"] not in exclude:
                seen.add((st["leader_id"], st["epoch"]))
        return seen.pop() if len(seen) == 1 else None

    def wait_leader(
        self, exclude: set[int], min_epoch: int, timeout_s: float = 60
    ) -> tuple[int, int]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.leader(exclude)
            if found is not None and found[1] >= min_epoch:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no leader: {self.q.statuses()}")

    def stop(self) -> None:
        for p in self.java.values():
            if p.poll() is None:
                p.kill()
                p.wait(30)
        self.q.stop_all()


def _client(m: Mixed) -> LogClient:
    ours = [Endpoint("127.0.0.1", m.q.nodes[i].port) for i in (1, 2)]
    return LogClient(ours, timeout_s=0.0, request_timeout_s=5, topic=TEST_RAFT_TOPIC)


async def _append_some(m: Mixed, acked: dict[bytes, int], n: int, tag: str) -> int:
    client = _client(m)
    done = 0
    try:
        for i in range(n * 3):
            value = f"{tag}-{i}".encode()
            try:
                acked[value] = await client.append([value], timeout_ms=5000)
                done += 1
            except Exception:
                await asyncio.sleep(0.1)
            if done >= n:
                break
    finally:
        await client.close()
    return done


async def _committed(m: Mixed, at_least: int) -> tuple[int, list[tuple[int, bytes]]]:
    """The committed log, read from the leader (ours or TestRaftServer) once its HW reaches
    `at_least` (a new leader knows its HW only once its epoch commits)."""
    client = LogClient(
        [Endpoint("127.0.0.1", m.q.nodes[i].port) for i in (1, 2)],
        timeout_s=30,
        topic=TEST_RAFT_TOPIC,
    )
    try:
        deadline = time.monotonic() + 60
        _, _, hw = await client.read(0, max_wait_ms=0)
        while hw < at_least and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            _, _, hw = await client.read(0, max_wait_ms=0)
        out: list[tuple[int, bytes]] = []
        offset = 0
        while offset < hw:
            records, offset, _ = await client.read(offset, max_wait_ms=100)
            out.extend((r.offset, r.value) for r in records if r.offset < hw)
        return hw, out
    finally:
        await client.close()


def _on_disk(m: Mixed, nid: int, hw: int) -> list[tuple[int, bytes]]:
    """A replica's data records below `hw`, read from its segment files (Kafka's or ours)."""
    part = m.q.nodes[nid].directory / TEST_RAFT_TOPIC.partition_dir
    out = []
    for seg in sorted(part.glob("*.log")):
        for batch in iter_batches(seg.read_bytes()):
            if batch.is_control:
                continue
            out.extend((r.offset, r.value or b"") for r in batch if r.offset < hw)
    return out


def test_kafka_test_raft_server_votes_beside_our_nodes(
    tmp_path: Path, kafka_classpath: str
) -> None:
    m = Mixed(tmp_path, kafka_classpath)
    acked: dict[bytes, int] = {}
    led: dict[str, int] = {"ours": 0, "kafka": 0}
    try:
        for nid in (1, 2, 3):
            m.start(nid)
        leader, epoch = m.wait_leader(set(), 1)
        kills = 0
        while (min(led.values()) == 0 or kills < 4) and kills < 10:
            kind = "kafka" if leader in KAFKA_NODES else "ours"
            led[kind] += 1
            if kind == "ours":
                assert asyncio.run(_append_some(m, acked, 30, f"e{epoch}")) == 30
            else:
                time.sleep(2)  # TestRaftServer appends its own records (20/s)
            m.kill(leader)
            kills += 1
            leader, epoch = m.wait_leader({leader}, epoch + 1)
            m.start(next(n for n in (1, 2, 3) if n not in {leader} and not _alive(m, n)))
        assert led["ours"] >= 1 and led["kafka"] >= 1, led
        for nid in (1, 2, 3):  # everyone up and caught up before the checks
            if not _alive(m, nid):
                m.start(nid)
        hw, log = asyncio.run(_committed(m, max(acked.values()) + 1))
        values = {v: o for o, v in log}
        lost = {v: (o, values.get(v)) for v, o in acked.items() if values.get(v) != o}
        assert not lost, f"acknowledged appends lost or moved (hw {hw}): {list(lost.items())[:5]}"
        ours = [v for _, v in log if not v.startswith(b"\x00")]
        assert len(ours) == len(set(ours)) and set(acked) <= set(ours)
        assert any(v == bytes(RECORD_SIZE) for _, v in log), "no TestRaftServer record committed"
        wait_for(
            lambda: all(_on_disk(m, n, hw) == log for n in (1, 2, 3)),
            60,
            "every replica's log to hold the committed records",
        )

        # A second TestRaftServer joins as an observer and becomes a voter through our CLI.
        m.start(4)
        boot = ",".join(f"127.0.0.1:{m.q.nodes[i].port}" for i in (1, 2))

        def add() -> bool:
            r = our_cli(
                "quorum",
                "--bootstrap-controller",
                boot,
                "add-controller",
                "--config",
                str(m.q.nodes[4].config_path),
            )
            return r.returncode == 0

        wait_for(add, 90, "our add-controller of TestRaftServer 4 to succeed")
        adder = m.leader()
        wait_for(lambda: 4 in (m.q.nodes[1].status() or {}).get("voters", []), 30, "4 a voter")
        r = our_cli(
            "quorum",
            "--bootstrap-controller",
            boot,
            "remove-controller",
            "--controller-id",
            "4",
            "--controller-directory-id",
            m.dir_id(4),
        )
        assert r.returncode == 0, r.stderr
        wait_for(lambda: 4 not in (m.q.nodes[1].status() or {}).get("voters", [4]), 30, "4 removed")
        print(
            f"\n[issue-15 mixed] leaders: {led}, kills: {kills}, acked: {len(acked)}, hw: {hw}, "
            f"leader at the add of TestRaftServer 4: {adder}"
        )
    finally:
        m.stop()


def _alive(m: Mixed, nid: int) -> bool:
    if nid in KAFKA_NODES:
        p = m.java.get(nid)
        return p is not None and p.poll() is None
    proc = m.q.nodes[nid].process
    return proc is not None and proc.poll() is None

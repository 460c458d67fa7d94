"""Faults on real processes (marker `integration`): SIGSTOP of a follower and of the leader,
a partition through TCP proxies, and an observer that catches up."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest
from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import Endpoint
from metaquorum.runtime.local_quorum import LocalQuorum

from tests.integration.quorum_fixture import FAST, our_cli, running_quorum, wait_for
from tests.integration.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def _append(q: LocalQuorum, values: list[bytes], timeout_s: float = 20) -> int:
    async def go() -> int:
        c = LogClient(
            [Endpoint("127.0.0.1", n.port) for n in q.nodes.values()], timeout_s=timeout_s
        )
        try:
            return await c.append(values, timeout_ms=2000)
        finally:
            await c.close()

    return asyncio.run(go())


def _caught_up(q: LocalQuorum, nid: int, leader: int) -> bool:
    s, lead = q.nodes[nid].status(), q.nodes[leader].status()
    return bool(
        s
        and lead
        and s["log_end_offset"] == lead["log_end_offset"]
        and s["high_watermark"] == lead["high_watermark"]
    )


def test_sigstop_follower_then_leader(tmp_path: Path) -> None:
    with running_quorum(tmp_path, extra=FAST) as q:
        leader, epoch = q.wait_for_leader(30)
        follower = next(n for n in q.voter_ids if n != leader)
        q.signal(follower, signal.SIGSTOP)
        base = _append(q, [b"while-follower-stopped"])  # 2 of 3 still commit
        assert q.leader() == (leader, epoch)
        q.signal(follower, signal.SIGCONT)
        wait_for(lambda: _caught_up(q, follower, leader), 20, "the stopped follower to catch up")

        q.signal(leader, signal.SIGSTOP)
        new, new_epoch = q.wait_for_leader(20, exclude={leader}, min_epoch=epoch + 1)
        base2 = _append(q, [b"after-leader-stopped"])
        assert base2 > base
        q.signal(leader, signal.SIGCONT)

        def old_leader_follows() -> bool:
            s = q.nodes[leader].status()
            return bool(s and s["state"] == "follower" and s["leader_id"] == new)

        wait_for(old_leader_follows, 20, "the resumed old leader to follow the new leader")
        wait_for(lambda: _caught_up(q, leader, new), 20, "the old leader to catch up")
        assert new_epoch > epoch


def _partitioned_quorum(tmp_path: Path) -> tuple[LocalQuorum, dict[tuple[int, int], TcpProxy]]:
    """3 voters where every directed pair (src -> dst) goes through its own proxy."""
    # The proxies listen before the quorum picks its free ports: bound after, a proxy's
    # ephemeral port could be a node's, and that node would fail to start.
    unbound = [TcpProxy(0) for _ in range(6)]
    q = LocalQuorum(tmp_path, 3, extra=FAST)
    q.write_configs()
    pairs = [(s, d) for s in q.voter_ids for d in q.voter_ids if s != d]
    proxies = dict(zip(pairs, unbound, strict=True))
    for (_, d), p in proxies.items():
        p.target_port = q.nodes[d].port
    for s in q.voter_ids:
        node = q.nodes[s]
        voters = ",".join(
            f"{d}@127.0.0.1:{node.port if d == s else proxies[(s, d)].port}" for d in q.voter_ids
        )
        text = node.config_path.read_text()
        text = "\n".join(
            f"controller.quorum.voters={voters}"
            if line.startswith("controller.quorum.voters=")
            else line
            for line in text.splitlines()
        )
        node.config_path.write_text(text + "\n")
    q.format()
    return q, proxies


def test_partitioned_leader_is_replaced_and_rejoins(tmp_path: Path) -> None:
    q, proxies = _partitioned_quorum(tmp_path)
    q.start_all()
    try:
        old, epoch = q.wait_for_leader(30)
        _append(q, [b"before-partition"])
        for (s, d), p in proxies.items():
            if old in (s, d):
                p.cut()
        new, new_epoch = q.wait_for_leader(20, exclude={old}, min_epoch=epoch + 1)
        base = _append(q, [b"during-partition"])

        def old_resigned() -> bool:  # check-quorum: it cannot stay leader without a majority
            s = q.nodes[old].status()
            return bool(s and s["state"] != "leader")

        wait_for(old_resigned, 10, "the isolated leader to resign")
        for p in proxies.values():
            p.heal()
        wait_for(lambda: _caught_up(q, old, new), 30, "the old leader to rejoin after healing")
        s = q.nodes[old].status()
        assert s is not None and s["leader_id"] == new and s["high_watermark"] > base
        assert new_epoch > epoch
    finally:
        q.stop_all()
        for p in proxies.values():
            p.close()


def test_observer_catches_up_and_is_described(tmp_path: Path) -> None:
    q = LocalQuorum(tmp_path, 3, observers=1, extra=FAST)
    q.write_configs()
    q.format()
    for nid in q.voter_ids:
        q.start(nid)
    try:
        leader, _ = q.wait_for_leader(30)
        for i in range(20):
            _append(q, [f"r{i}".encode()])
        q.start(4)
        wait_for(lambda: _caught_up(q, 4, leader), 30, "the observer to catch up")
        s4 = q.nodes[4].status()
        assert s4 is not None and s4["state"] == "observer" and s4["leader_id"] == leader
        r = our_cli(
            "quorum", "--bootstrap-controller", q.nodes[leader].address, "describe", "--replication"
        )
        assert r.returncode == 0
        rows = [line.split("\t") for line in r.stdout.splitlines()[1:]]
        assert [row[0].strip() for row in rows if row[6].strip() == "Observer"] == ["4"]
        assert q.leader() is not None
    finally:
        q.stop_all()


def test_deposed_leader_never_serves_a_stale_read(tmp_path: Path) -> None:
    """A leader cut off from both followers still believes it leads until check-quorum resigns
    it; meanwhile the others elect a successor and commit a write. A consumer reading from the
    old leader must never get an answer (error NONE) whose HW misses that acknowledged write:
    the read lease (core/read_lease.py) makes it answer NOT_LEADER_OR_FOLLOWER instead. Before
    the lease, the old leader answered such stale reads for a few hundred ms."""
    from metaquorum.net.connection import KafkaConnection
    from metaquorum.protocol.api_keys import ApiKeys
    from metaquorum.protocol.messages import FetchRequestData, FetchResponseData
    from metaquorum.protocol.types import METADATA_TOPIC_ID

    q, proxies = _partitioned_quorum(tmp_path)
    q.start_all()
    try:
        old, epoch = q.wait_for_leader(30)
        _append(q, [b"before-partition"])

        async def scenario() -> list[tuple[float, int]]:
            conn = KafkaConnection("127.0.0.1", q.nodes[old].port)
            request = FetchRequestData(
                replica_id=-1, max_wait_ms=0, max_bytes=1 << 16,
                topics=[FetchRequestData.FetchTopic(
                    topic="__cluster_metadata", topic_id=METADATA_TOPIC_ID,
                    partitions=[FetchRequestData.FetchPartition(partition=0, fetch_offset=0)],
                )],
            )  # fmt: skip
            answers: list[tuple[float, int, int]] = []  # (sent at, error, hw)
            stop = asyncio.Event()

            async def poll_old_leader() -> None:
                while not stop.is_set():
                    sent = time.monotonic()  # a read that starts after the ack must see it
                    try:
                        r = await conn.request(ApiKeys.FETCH, 12, request, 2)
                        assert isinstance(r, FetchResponseData)
                        p = r.responses[0].partitions[0]
                        answers.append((sent, p.error_code, p.high_watermark))
                    except (TimeoutError, ConnectionError):
                        pass
                    await asyncio.sleep(0.005)

            poller = asyncio.create_task(poll_old_leader())
            for (s, d), p in proxies.items():
                if old in (s, d):
                    p.cut()
            await asyncio.to_thread(q.wait_for_leader, 20, {old}, epoch + 1)
            acked = await asyncio.to_thread(_append, q, [b"after-partition"])
            acked_at = time.monotonic()
            await asyncio.sleep(2.0)  # past the old leader's check-quorum resignation
            stop.set()
            await poller
            await conn.close()
            return [(t, hw) for t, err, hw in answers if t > acked_at and err == 0 and hw <= acked]

        stale = asyncio.run(scenario())  # (sent at, hw) of reads that missed the write
        assert stale == [], f"{len(stale)} reads from the deposed leader missed an acked write"
    finally:
        q.stop_all()
        for p in proxies.values():
            p.close()

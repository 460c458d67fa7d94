"""Faults on real processes (marker `integration`): SIGSTOP of a follower and of the leader,
a partition through TCP proxies, and an observer that catches up."""

from __future__ import annotations

import asyncio
import signal
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
    q = LocalQuorum(tmp_path, 3, extra=FAST)
    q.write_configs()
    proxies = {
        (s, d): TcpProxy(q.nodes[d].port) for s in q.voter_ids for d in q.voter_ids if s != d
    }
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

"""One core request in flight per peer connection (runtime/peers.py), over real TCP.

Kafka's raft client never pipelines (`KafkaRaftManager` max.in.flight = 1), and the leader's
read lease (core/read_lease.py) relies on it: a voter's Fetch that follows a response on one
connection proves that response arrived. CI's nemesis (2026-11-29, seed 303) found the gap:
after a state change the core forgets its request in flight and sends a new one, which went out
on the same connection behind the old one; a paused leader, on waking, answered the old one and
took the new one, sent long before, as proof. A newer request, or an abandoned one, now closes
the connection first.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

from metaquorum.net.endpoint import Endpoint
from metaquorum.net.wire import encode_response
from metaquorum.protocol.messages import VoteRequestData, VoteResponseData
from metaquorum.runtime.config import config_from_properties
from metaquorum.runtime.peers import PeerPool


class _Peer:
    """A TCP server that records, per connection, the correlation ids it read; it answers a
    request only when told to."""

    def __init__(self) -> None:
        self.conns: list[list[int]] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.closed: list[bool] = []

    async def accept(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        index = len(self.conns)
        self.conns.append([])
        self.writers.append(w)
        self.closed.append(False)
        try:
            while True:
                (size,) = struct.unpack(">i", await r.readexactly(4))
                payload = await r.readexactly(size)
                _key, _version, cid = struct.unpack_from(">hhi", payload)
                self.conns[index].append(cid)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.closed[index] = True

    def answer(self, conn: int, cid: int) -> None:
        self.writers[conn].write(encode_response(52, 0, cid, VoteResponseData()))


async def _until(check: object, what: str) -> None:
    for _ in range(200):
        if callable(check) and check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_newer_or_abandoned_request_never_shares_a_connection(tmp_path: Path) -> None:
    peer = _Peer()
    server = await asyncio.start_server(peer.accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = config_from_properties(
        {
            "process.roles": "controller",
            "node.id": "1",
            "controller.listener.names": "CONTROLLER",
            "listeners": "CONTROLLER://127.0.0.1:9001",
            "metadata.log.dir": str(tmp_path / "meta"),
            "controller.quorum.voters": f"1@127.0.0.1:9001,2@127.0.0.1:{port}",
        }
    )
    answers: list[int] = []
    failures: list[int] = []
    pool = PeerPool(
        config,
        {2: Endpoint("127.0.0.1", port)},
        lambda dest, cid, *rest: answers.append(cid),
        lambda dest, cid: failures.append(cid),
    )
    try:
        pool.send(2, 7, VoteRequestData())
        await _until(lambda: len(peer.conns) == 1 and len(peer.conns[0]) == 1, "request 7")
        # The core moved on (its state changed) and sends again: not behind 7 on its connection.
        pool.send(2, 8, VoteRequestData())
        await _until(lambda: len(peer.conns) == 2 and len(peer.conns[1]) == 1, "request 8")
        await _until(lambda: peer.closed[0], "the first connection closed")
        assert failures == [7] and len(peer.conns[0]) == 1
        assert 2 not in pool.unreachable  # closed on purpose: the replica is not unreachable
        # An answered request leaves its connection open for the next one.
        peer.answer(1, peer.conns[1][0])
        await _until(lambda: answers == [8], "the answer to 8")
        pool.send(2, 9, VoteRequestData())
        await _until(lambda: len(peer.conns[1]) == 2, "request 9 on the same connection")
        # An id the core no longer has in flight there changes nothing; the one it has, closes.
        pool.abandon(2, 8)
        await asyncio.sleep(0.05)
        assert not peer.closed[1] and failures == [7]
        pool.abandon(2, 9)
        await _until(lambda: peer.closed[1], "the second connection closed")
        assert failures == [7, 9]
        pool.send(2, 10, VoteRequestData())
        await _until(lambda: len(peer.conns) == 3 and len(peer.conns[2]) == 1, "request 10")
        assert [len(c) for c in peer.conns] == [1, 2, 1] and pool.abandoned == 2
    finally:
        await pool.close()
        for w in peer.writers:
            w.close()
        server.close()
        await server.wait_closed()

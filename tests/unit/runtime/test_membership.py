"""The runtime's voter set (issue 13): the start-up set comes from the bootstrap checkpoint when
the log dir has one, else from the static `controller.quorum.voters`, else a one-line error;
the peer pool follows `set_endpoints` (new, moved and removed voters)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from metaquorum.core.ids import ReplicaKey
from metaquorum.net.endpoint import ConfigError, Endpoint
from metaquorum.protocol.messages import VoteRequestData
from metaquorum.protocol.types import Uuid
from metaquorum.runtime.config import config_from_properties
from metaquorum.runtime.membership import local_endpoints, startup_membership, voter_endpoints
from metaquorum.runtime.peers import PeerPool
from metaquorum.storage.formatter import DynamicVoter, ServerConfig, format_storage
from metaquorum.storage.log import LogConfig
from metaquorum.storage.replica import open_replica_storage

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def _props(tmp_path: Path, quorum: dict[str, str]) -> dict[str, str]:
    return {
        "process.roles": "controller",
        "node.id": "1",
        "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://127.0.0.1:9001",
        "metadata.log.dir": str(tmp_path / "meta"),
        **quorum,
    }


def _format(tmp_path: Path, props: dict[str, str], **kw: Any) -> None:
    cfg = tmp_path / "server.properties"
    cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    format_storage(ServerConfig.load(cfg), CLUSTER, **kw)


def test_startup_voters_come_from_the_bootstrap_checkpoint(tmp_path: Path) -> None:
    props = _props(tmp_path, {"controller.quorum.bootstrap.servers": "127.0.0.1:9001"})
    dirs = [Uuid.random() for _ in range(3)]
    controllers = [DynamicVoter(i + 1, "127.0.0.1", 9001 + i, dirs[i]) for i in range(3)]
    _format(tmp_path, props, initial_controllers=controllers)
    storage = open_replica_storage(tmp_path / "meta", node_id=1, config=LogConfig(fsync=False))
    membership = startup_membership(config_from_properties(props), storage)
    voters = membership.voters
    assert voters.sorted_ids() == [1, 2, 3] and membership.kraft_version == 1
    assert voters.is_voter(ReplicaKey(2, str(dirs[1])))
    assert not voters.is_voter(ReplicaKey(2, str(Uuid.random())))
    assert voter_endpoints(voters, "CONTROLLER") == {
        1: Endpoint("127.0.0.1", 9001),
        2: Endpoint("127.0.0.1", 9002),
        3: Endpoint("127.0.0.1", 9003),
    }


def test_startup_voters_from_static_config_else_none_with_bootstrap_servers(
    tmp_path: Path,
) -> None:
    static = _props(tmp_path, {"controller.quorum.voters": "1@127.0.0.1:9001,2@h:9002"})
    _format(tmp_path, static)
    storage = open_replica_storage(tmp_path / "meta", node_id=1, config=LogConfig(fsync=False))
    membership = startup_membership(config_from_properties(static), storage)
    voters = membership.voters
    assert membership.kraft_version == 0
    assert voter_endpoints(voters, "CONTROLLER") == {
        1: Endpoint("127.0.0.1", 9001),
        2: Endpoint("h", 9002),
    }
    # Formatted --no-initial-controllers (no checkpoint), only bootstrap servers: no voters
    # yet; the node starts as an observer (Kafka's empty VoterSet).
    dynamic = _props(tmp_path, {"controller.quorum.bootstrap.servers": "127.0.0.1:9001"})
    joining = startup_membership(config_from_properties(dynamic), storage)
    assert len(joining.voters) == 0 and joining.kraft_version == 0


def test_config_needs_voters_or_bootstrap_servers(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="both missing"):
        config_from_properties(_props(tmp_path, {}))


async def test_peer_pool_follows_the_voter_endpoints(tmp_path: Path) -> None:
    hung: list[asyncio.StreamWriter] = []

    async def accept(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        hung.append(w)  # never answers

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    failures: list[tuple[int, int]] = []
    config = config_from_properties(
        _props(tmp_path, {"controller.quorum.voters": f"1@127.0.0.1:9001,2@127.0.0.1:{port}"})
    )
    pool = PeerPool(
        config,
        {1: Endpoint("127.0.0.1", 9001), 2: Endpoint("127.0.0.1", port)},
        lambda *a: None,
        lambda dest, cid: failures.append((dest, cid)),
    )
    try:
        assert set(pool.connections) == {2}  # never a connection to itself
        pool.send(2, 7, VoteRequestData())
        for _ in range(100):
            if pool.in_flight:
                break
            await asyncio.sleep(0.01)
        assert pool.in_flight == 1
        # Voter 2 removed, voter 3 added: 2's request in flight fails, once.
        pool.set_endpoints({1: Endpoint("127.0.0.1", 9001), 3: Endpoint("127.0.0.1", 1)})
        await asyncio.sleep(0.05)
        assert failures == [(2, 7)] and set(pool.connections) == {3}
        moved = pool.connections[3]
        pool.set_endpoints({3: Endpoint("127.0.0.1", 2)})  # voter 3 moved: a new connection
        assert pool.connections[3] is not moved and pool.endpoints[3] == Endpoint("127.0.0.1", 2)
        pool.set_endpoints({3: Endpoint("127.0.0.1", 2)})  # unchanged: the same connection
        assert pool.endpoints == {3: Endpoint("127.0.0.1", 2)}
    finally:
        await pool.close()
        for w in hung:
            w.close()
        server.close()
        await server.wait_closed()


# What a voter advertises (Kafka's KafkaConfig.effectiveAdvertisedControllerListeners): a pod
# binds its IP and advertises its stable name; before this, the runtime advertised the bound
# address and its first leadership rewrote the formatted voter entry to the pod's IP.


def test_a_voter_advertises_its_advertised_listener_not_its_bound_address(tmp_path: Path) -> None:
    props = _props(
        tmp_path,
        {
            "controller.quorum.bootstrap.servers": "mq-0.mq:9001",
            "advertised.listeners": "CONTROLLER://mq-0.mq.ns.svc:9001",
        },
    )
    ends = local_endpoints(config_from_properties(props))
    assert [(e.name, e.host, e.port) for e in ends] == [("CONTROLLER", "mq-0.mq.ns.svc", 9001)]


def test_a_wildcard_bind_advertises_the_own_static_voter_entry_else_the_host_name(
    tmp_path: Path,
) -> None:
    props = _props(tmp_path, {"controller.quorum.voters": "1@node-1.example:9001"})
    props["listeners"] = "CONTROLLER://0.0.0.0:9001"
    assert local_endpoints(config_from_properties(props))[0].host == "node-1.example"
    props = _props(tmp_path, {"controller.quorum.bootstrap.servers": "node-1.example:9001"})
    props["listeners"] = "CONTROLLER://0.0.0.0:9001"
    assert local_endpoints(config_from_properties(props))[0].host == socket.getfqdn() != "0.0.0.0"


def test_advertising_the_meta_address_is_refused_with_the_fix(tmp_path: Path) -> None:
    props = _props(tmp_path, {"controller.quorum.bootstrap.servers": "127.0.0.1:9001"})
    props["advertised.listeners"] = "CONTROLLER://0.0.0.0:9001"
    with pytest.raises(ConfigError, match=r"advertised\.listeners cannot use .*0\.0\.0\.0"):
        config_from_properties(props)

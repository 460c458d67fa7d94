"""The voter set a node starts with, and the endpoints the runtime reaches voters at
(KIP-595 static voters; KIP-853 bootstrap checkpoint).

Role: pick the start-up voter set handed to the core: the VotersRecord of the bootstrap
checkpoint (`00000000000000000000-0000000000.checkpoint`, written by `format --standalone` or
`--initial-controllers`) when the log dir has one, else the static `controller.quorum.voters`
(no directory ids, endpoints on the controller listener), else (formatted
`--no-initial-controllers`, only `controller.quorum.bootstrap.servers`) no voters at all: the
node starts as an observer and finds the leader through the bootstrap servers. Later changes
come from the core as `VotersChanged` effects (the log's VotersRecords); `voter_endpoints` turns
either into the `host:port` map the peer pool, DescribeCluster and Produce's node endpoints use.
`local_endpoints` is what this node advertises as a voter (its VotersRecord entry, auto-join's
AddRaftVoter, UpdateRaftVoter, the leader's NodeEndpoints): Kafka's
`KafkaConfig.effectiveAdvertisedControllerListeners` + `ListenerInfo.withWildcardHostnamesResolved`
— per controller listener its `advertised.listeners` entry, else its `listeners` entry, where a
wildcard host (0.0.0.0) becomes this node's own `controller.quorum.voters` entry (first listener
only) or the host's canonical name. So a pod bound to its IP advertises its stable DNS name and
never rewrites the voter set to an address that dies with the pod.
Invariants: a node never starts with neither a voter set nor bootstrap servers (one line naming
the fixes); a voter with
no endpoint on the controller listener is unreachable (left out of the map), never guessed.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from metaquorum.core.log import Snapshot
from metaquorum.core.voter_set import ListenerEndpoint, VoterSet
from metaquorum.net.endpoint import ConfigError, Endpoint
from metaquorum.protocol.control_records import snapshot_control
from metaquorum.runtime.config import NodeConfig
from metaquorum.storage.replica import ReplicaStorage
from metaquorum.storage.snapshot_records import read_snapshot
from metaquorum.storage.snapshots import BOOTSTRAP_SNAPSHOT_ID, snapshot_file_name


@dataclass(frozen=True, slots=True)
class StartupMembership:
    voters: VoterSet
    kraft_version: int


def bootstrap_membership(storage: ReplicaStorage) -> StartupMembership | None:
    """The bootstrap checkpoint's voters and kraft.version, or None when there is no checkpoint
    or it names no voters."""
    path = storage.partition_dir / snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID)
    if not path.exists():
        return None
    contents = read_snapshot(path)
    if contents.voters is None or not contents.voters.voters:
        return None
    kraft = contents.kraft_version.kraft_version if contents.kraft_version is not None else 1
    return StartupMembership(VoterSet.from_voters_record(contents.voters), kraft)


def startup_membership(
    config: NodeConfig, storage: ReplicaStorage, snapshot: Snapshot | None = None
) -> StartupMembership:
    """Bootstrap checkpoint, else the voters of the newest snapshot (the checkpoint may have
    been cleaned away behind it), else the static `controller.quorum.voters`."""
    found = bootstrap_membership(storage)
    if found is not None:
        return found
    if snapshot is not None:
        kraft, voters = snapshot_control(snapshot.payload)
        if voters is not None and voters.voters:
            version = kraft.kraft_version if kraft is not None else 1
            return StartupMembership(VoterSet.from_voters_record(voters), version)
    if config.voters:
        voters_set = VoterSet.from_endpoints(
            config.listener_name, {nid: (ep.host, ep.port) for nid, ep in config.voters.items()}
        )
        return StartupMembership(voters_set, 0)
    if config.bootstrap_servers:
        # Formatted --no-initial-controllers: an observer that learns the voters from the
        # leader it finds through the bootstrap servers (Kafka: an empty voter set).
        return StartupMembership(VoterSet.empty(), 0)
    raise ConfigError(
        f"no voter set: {storage.log_dir} has no bootstrap checkpoint with voters and "
        "controller.quorum.voters is not set; format with --standalone or "
        "--initial-controllers, or set controller.quorum.voters or "
        "controller.quorum.bootstrap.servers"
    )


WILDCARD_HOSTS = ("0.0.0.0", "::")


def local_endpoints(config: NodeConfig) -> tuple[ListenerEndpoint, ...]:
    """This node's advertised endpoints on its controller listeners (its VotersRecord entry)."""
    out = []
    for i, name in enumerate(config.controller_listener_names):
        endpoint = config.advertised_listeners.get(name) or config.listeners.get(name)
        if endpoint is None:
            continue
        if name not in config.advertised_listeners and endpoint.host in WILDCARD_HOSTS:
            own = config.voters.get(config.node_id) if i == 0 else None
            endpoint = own or Endpoint(socket.getfqdn(), endpoint.port)
        out.append(ListenerEndpoint(name, endpoint.host, endpoint.port))
    return tuple(out)


def bootstrap_endpoints(config: NodeConfig) -> tuple[ListenerEndpoint, ...]:
    """`controller.quorum.bootstrap.servers` on the controller listener (the core's
    discovery gives them Kafka's pseudo-ids)."""
    return tuple(
        ListenerEndpoint(config.listener_name, ep.host, ep.port) for ep in config.bootstrap_servers
    )


def voter_endpoints(voters: VoterSet, listener: str) -> dict[int, Endpoint]:
    return {nid: Endpoint(ep.host, ep.port) for nid, ep in voters.endpoints(listener).items()}

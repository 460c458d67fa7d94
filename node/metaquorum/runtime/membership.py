"""The voter set a node starts with, and the endpoints the runtime reaches voters at
(KIP-595 static voters; KIP-853 bootstrap checkpoint).

Role: pick the start-up voter set handed to the core: the VotersRecord of the bootstrap
checkpoint (`00000000000000000000-0000000000.checkpoint`, written by `format --standalone` or
`--initial-controllers`) when the log dir has one, else the static `controller.quorum.voters`
(no directory ids, endpoints on the controller listener). Later changes come from the core as
`VotersChanged` effects (the log's VotersRecords); `voter_endpoints` turns either into the
`host:port` map the peer pool, DescribeCluster and Produce's node endpoints use.
Invariants: a node never starts without a voter set (one line naming both fixes); a voter with
no endpoint on the controller listener is unreachable (left out of the map), never guessed.
"""

from __future__ import annotations

from metaquorum.core.voter_set import VoterSet
from metaquorum.net.endpoint import ConfigError, Endpoint
from metaquorum.runtime.config import NodeConfig
from metaquorum.storage.replica import ReplicaStorage
from metaquorum.storage.snapshot_records import read_snapshot
from metaquorum.storage.snapshots import BOOTSTRAP_SNAPSHOT_ID, snapshot_file_name


def bootstrap_voter_set(storage: ReplicaStorage) -> VoterSet | None:
    """The bootstrap checkpoint's voters, or None when there is no checkpoint or it has none."""
    path = storage.partition_dir / snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID)
    if not path.exists():
        return None
    voters = read_snapshot(path).voters
    if voters is None or not voters.voters:
        return None
    return VoterSet.from_voters_record(voters)


def startup_voter_set(config: NodeConfig, storage: ReplicaStorage) -> VoterSet:
    from_checkpoint = bootstrap_voter_set(storage)
    if from_checkpoint is not None:
        return from_checkpoint
    if config.voters:
        return VoterSet.from_endpoints(
            config.listener_name, {nid: (ep.host, ep.port) for nid, ep in config.voters.items()}
        )
    raise ConfigError(
        f"no voter set: {storage.log_dir} has no bootstrap checkpoint with voters and "
        "controller.quorum.voters is not set; format with --standalone or "
        "--initial-controllers, or set controller.quorum.voters"
    )


def voter_endpoints(voters: VoterSet, listener: str) -> dict[int, Endpoint]:
    return {nid: Endpoint(ep.host, ep.port) for nid, ep in voters.endpoints(listener).items()}

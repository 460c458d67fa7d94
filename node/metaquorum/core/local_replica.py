"""Who this replica is: the identity every handler reads and none changes (a leaf).

Role: the replica's id and directory id (its `ReplicaKey`, KIP-853), its controller listener
endpoints, the cluster id it was formatted with, the one topic partition it replicates on the
wire, and the pseudo-id nodes of `controller.quorum.bootstrap.servers` (`discovery.py`).
Kafka keeps these as fields of `KafkaRaftClient` (`nodeId`, `nodeDirectoryId`, `localListeners`,
`clusterId`) and `QuorumState.localReplicaKey`.
Invariants: immutable for the life of a `RaftNode`; `key` is `ReplicaKey(id, directory_id)`;
the controller listener is the first local endpoint's (Kafka's `channel.listenerName()`).
"""

from __future__ import annotations

from dataclasses import field

from metaquorum.core.ids import ReplicaKey
from metaquorum.core.value import value
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode
from metaquorum.protocol.types import RaftTopic

# A bootstrap address as a node: Kafka's pseudo-id (-2, -3, ...) and its endpoint.
BootstrapNode = tuple[int, ListenerEndpoint | None]


@value
class LocalReplica:
    id: int
    cluster_id: str
    topic: RaftTopic
    directory_id: str | None = None
    endpoints: tuple[ListenerEndpoint, ...] = ()
    bootstrap_nodes: tuple[BootstrapNode, ...] = ()
    key: ReplicaKey = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", ReplicaKey(self.id, self.directory_id))

    @property
    def listener_name(self) -> str:
        """The controller listener (Kafka's `channel.listenerName()`): the first local one."""
        return self.endpoints[0].name if self.endpoints else "CONTROLLER"

    def voter_node(self) -> VoterNode:
        """This replica as a voter entry: key, endpoints, kraft.version 0-1 (Kafka 4.3's)."""
        return VoterNode(self.key, self.endpoints, 0, 1)

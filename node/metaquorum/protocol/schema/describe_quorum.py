"""DescribeQuorum (55), versions 0-2, flexible 0+ (KIP-595, KIP-836 v1, KIP-853 v2).

v1 adds LastFetchTimestamp / LastCaughtUpTimestamp; v2 adds ErrorMessage (top level and
partition), Nodes, and ReplicaDirectoryId in ReplicaState. Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, Struct, f

DESCRIBE_QUORUM_REQUEST = Message(
    "DescribeQuorumRequest", "request", "0-2", "0+", api_key=55,
    fields=(
        f("Topics", "[]TopicData", "0+",
          f("TopicName", "string", "0+"),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"))),
    ),
)  # fmt: skip

DESCRIBE_QUORUM_RESPONSE = Message(
    "DescribeQuorumResponse", "response", "0-2", "0+", api_key=55,
    fields=(
        f("ErrorCode", "int16", "0+"),
        f("ErrorMessage", "string", "2+", nullable="2+", ignorable=True),
        f("Topics", "[]TopicData", "0+",
          f("TopicName", "string", "0+"),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"),
            f("ErrorCode", "int16", "0+"),
            f("ErrorMessage", "string", "2+", nullable="2+", ignorable=True),
            f("LeaderId", "int32", "0+"),
            f("LeaderEpoch", "int32", "0+"),
            f("HighWatermark", "int64", "0+"),
            f("CurrentVoters", "[]ReplicaState", "0+"),
            f("Observers", "[]ReplicaState", "0+"))),
        f("Nodes", "[]Node", "2+",
          f("NodeId", "int32", "2+", map_key=True),
          f("Listeners", "[]Listener", "2+",
            f("Name", "string", "0+", map_key=True),
            f("Host", "string", "0+"),
            f("Port", "uint16", "0+"))),
    ),
    common_structs=(
        Struct("ReplicaState", (
            f("ReplicaId", "int32", "0+"),
            f("ReplicaDirectoryId", "uuid", "2+"),
            f("LogEndOffset", "int64", "0+"),
            f("LastFetchTimestamp", "int64", "1+", default=-1, ignorable=True),
            f("LastCaughtUpTimestamp", "int64", "1+", default=-1, ignorable=True),
        )),
    ),
)  # fmt: skip

MESSAGES = (DESCRIBE_QUORUM_REQUEST, DESCRIBE_QUORUM_RESPONSE)

"""BeginQuorumEpoch (53) and EndQuorumEpoch (54), versions 0-1, flexible 1+ (KIP-595, KIP-853).

v1 adds the voter key, LeaderEndpoints, tagged NodeEndpoints in responses, and (EndQuorumEpoch)
replaces PreferredSuccessors with PreferredCandidates. Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

NODE_ENDPOINT = (
    f("NodeId", "int32", "1+", map_key=True),
    f("Host", "string", "1+"),
    f("Port", "uint16", "1+"),
)
LEADER_ENDPOINT = (
    f("Name", "string", "1+", map_key=True),
    f("Host", "string", "1+"),
    f("Port", "uint16", "1+"),
)

BEGIN_QUORUM_EPOCH_REQUEST = Message(
    "BeginQuorumEpochRequest", "request", "0-1", "1+", api_key=53,
    fields=(
        f("ClusterId", "string", "0+", nullable="0+", null_default=True),
        f("VoterId", "int32", "1+", default=-1, ignorable=True),
        f("Topics", "[]TopicData", "0+",
          f("TopicName", "string", "0+"),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"),
            f("VoterDirectoryId", "uuid", "1+", ignorable=True),
            f("LeaderId", "int32", "0+"),
            f("LeaderEpoch", "int32", "0+"))),
        f("LeaderEndpoints", "[]LeaderEndpoint", "1+", *LEADER_ENDPOINT, ignorable=True),
    ),
)  # fmt: skip

BEGIN_QUORUM_EPOCH_RESPONSE = Message(
    "BeginQuorumEpochResponse", "response", "0-1", "1+", api_key=53,
    fields=(
        f("ErrorCode", "int16", "0+"),
        f("Topics", "[]TopicData", "0+",
          f("TopicName", "string", "0+"),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"),
            f("ErrorCode", "int16", "0+"),
            f("LeaderId", "int32", "0+"),
            f("LeaderEpoch", "int32", "0+"))),
        f("NodeEndpoints", "[]NodeEndpoint", "1+", *NODE_ENDPOINT, tag=0),
    ),
)  # fmt: skip

END_QUORUM_EPOCH_REQUEST = Message(
    "EndQuorumEpochRequest", "request", "0-1", "1+", api_key=54,
    fields=(
        f("ClusterId", "string", "0+", nullable="0+", null_default=True),
        f("Topics", "[]TopicData", "0+",
          f("TopicName", "string", "0+"),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"),
            f("LeaderId", "int32", "0+"),
            f("LeaderEpoch", "int32", "0+"),
            f("PreferredSuccessors", "[]int32", "0", ignorable=True),
            f("PreferredCandidates", "[]ReplicaInfo", "1+",
              f("CandidateId", "int32", "1+"),
              f("CandidateDirectoryId", "uuid", "1+"),
              ignorable=True))),
        f("LeaderEndpoints", "[]LeaderEndpoint", "1+", *LEADER_ENDPOINT, ignorable=True),
    ),
)  # fmt: skip

END_QUORUM_EPOCH_RESPONSE = Message(
    "EndQuorumEpochResponse", "response", "0-1", "1+", api_key=54,
    fields=(
        f("ErrorCode", "int16", "0+"),
        f("Topics", "[]TopicData", "0+",
          f("TopicName", "string", "0+"),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"),
            f("ErrorCode", "int16", "0+"),
            f("LeaderId", "int32", "0+"),
            f("LeaderEpoch", "int32", "0+"))),
        f("NodeEndpoints", "[]NodeEndpoint", "1+", *NODE_ENDPOINT, tag=0),
    ),
)  # fmt: skip

MESSAGES = (
    BEGIN_QUORUM_EPOCH_REQUEST,
    BEGIN_QUORUM_EPOCH_RESPONSE,
    END_QUORUM_EPOCH_REQUEST,
    END_QUORUM_EPOCH_RESPONSE,
)

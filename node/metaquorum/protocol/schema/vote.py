"""Vote (api key 52), versions 0-2, flexible 0+ (KIP-595 "Vote", KIP-853 v1, KIP-996 v2 PreVote).

v1 adds the voter key (VoterId, directory ids) and tagged NodeEndpoints in the response; v2 adds
PreVote (and renames Candidate* to Replica*, no wire change). Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

NODE_ENDPOINT = (
    f("NodeId", "int32", "1+", map_key=True),
    f("Host", "string", "1+"),
    f("Port", "uint16", "1+"),
)

VOTE_REQUEST = Message(
    "VoteRequest", "request", "0-2", "0+", api_key=52,
    fields=(
        f("ClusterId", "string", "0+", nullable="0+", null_default=True),
        f("VoterId", "int32", "1+", default=-1, ignorable=True),
        f("Topics", "[]TopicData", "0+",
          f("TopicName", "string", "0+"),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"),
            f("ReplicaEpoch", "int32", "0+"),
            f("ReplicaId", "int32", "0+"),
            f("ReplicaDirectoryId", "uuid", "1+", ignorable=True),
            f("VoterDirectoryId", "uuid", "1+", ignorable=True),
            f("LastOffsetEpoch", "int32", "0+"),
            f("LastOffset", "int64", "0+"),
            f("PreVote", "bool", "2+"))),
    ),
)  # fmt: skip

VOTE_RESPONSE = Message(
    "VoteResponse", "response", "0-2", "0+", api_key=52,
    fields=(
        f("ErrorCode", "int16", "0+"),
        f("Topics", "[]TopicData", "0+",
          f("TopicName", "string", "0+"),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"),
            f("ErrorCode", "int16", "0+"),
            f("LeaderId", "int32", "0+"),
            f("LeaderEpoch", "int32", "0+"),
            f("VoteGranted", "bool", "0+"))),
        f("NodeEndpoints", "[]NodeEndpoint", "1+", *NODE_ENDPOINT, tag=0),
    ),
)  # fmt: skip

MESSAGES = (VOTE_REQUEST, VOTE_RESPONSE)

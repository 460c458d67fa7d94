"""Fetch (api key 1), versions 4-18 (Kafka 4 dropped 0-3), flexible 12+ (KIP-595 "Fetch").

The raft replication RPC. Milestones: v7 sessions (KIP-227), v9 CurrentLeaderEpoch (KIP-320),
v11 RackId / PreferredReadReplica (KIP-392), v12 flexible + LastFetchedEpoch, DivergingEpoch,
CurrentLeader, SnapshotId (KIP-595), v13 topic ids replace names (KIP-516), v15 tagged
ReplicaState replaces ReplicaId (KIP-903), v16 NodeEndpoints (KIP-951), v17 ReplicaDirectoryId
(KIP-853), v18 tagged HighWatermark in the request (KIP-1166). Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

INT64_MAX = 0x7FFFFFFFFFFFFFFF
INT32_MAX = 0x7FFFFFFF

FETCH_REQUEST = Message(
    "FetchRequest", "request", "4-18", "12+", api_key=1,
    fields=(
        f("ClusterId", "string", "12+", nullable="12+", null_default=True, tag=0,
          ignorable=True),
        f("ReplicaId", "int32", "0-14", default=-1),
        f("ReplicaState", "ReplicaState", "15+",
          f("ReplicaId", "int32", "15+", default=-1),
          f("ReplicaEpoch", "int64", "15+", default=-1),
          tag=1),
        f("MaxWaitMs", "int32", "0+"),
        f("MinBytes", "int32", "0+"),
        f("MaxBytes", "int32", "3+", default=INT32_MAX, ignorable=True),
        f("IsolationLevel", "int8", "4+", ignorable=True),
        f("SessionId", "int32", "7+", ignorable=True),
        f("SessionEpoch", "int32", "7+", default=-1, ignorable=True),
        f("Topics", "[]FetchTopic", "0+",
          f("Topic", "string", "0-12", ignorable=True),
          f("TopicId", "uuid", "13+", ignorable=True),
          f("Partitions", "[]FetchPartition", "0+",
            f("Partition", "int32", "0+"),
            f("CurrentLeaderEpoch", "int32", "9+", default=-1, ignorable=True),
            f("FetchOffset", "int64", "0+"),
            f("LastFetchedEpoch", "int32", "12+", default=-1),
            f("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            f("PartitionMaxBytes", "int32", "0+"),
            f("ReplicaDirectoryId", "uuid", "17+", tag=0, ignorable=True),
            f("HighWatermark", "int64", "18+", default=INT64_MAX, tag=1, ignorable=True))),
        f("ForgottenTopicsData", "[]ForgottenTopic", "7+",
          f("Topic", "string", "7-12", ignorable=True),
          f("TopicId", "uuid", "13+", ignorable=True),
          f("Partitions", "[]int32", "7+")),
        f("RackId", "string", "11+", ignorable=True),
    ),
)  # fmt: skip

FETCH_RESPONSE = Message(
    "FetchResponse", "response", "4-18", "12+", api_key=1,
    fields=(
        f("ThrottleTimeMs", "int32", "1+", ignorable=True),
        f("ErrorCode", "int16", "7+", ignorable=True),
        f("SessionId", "int32", "7+"),
        f("Responses", "[]FetchableTopicResponse", "0+",
          f("Topic", "string", "0-12", ignorable=True),
          f("TopicId", "uuid", "13+", ignorable=True),
          f("Partitions", "[]PartitionData", "0+",
            f("PartitionIndex", "int32", "0+"),
            f("ErrorCode", "int16", "0+"),
            f("HighWatermark", "int64", "0+"),
            f("LastStableOffset", "int64", "4+", default=-1, ignorable=True),
            f("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            f("DivergingEpoch", "EpochEndOffset", "12+",
              f("Epoch", "int32", "12+", default=-1),
              f("EndOffset", "int64", "12+", default=-1),
              tag=0),
            f("CurrentLeader", "LeaderIdAndEpoch", "12+",
              f("LeaderId", "int32", "12+", default=-1),
              f("LeaderEpoch", "int32", "12+", default=-1),
              tag=1),
            f("SnapshotId", "SnapshotId", "12+",
              f("EndOffset", "int64", "0+", default=-1),
              f("Epoch", "int32", "0+", default=-1),
              tag=2),
            f("AbortedTransactions", "[]AbortedTransaction", "4+",
              f("ProducerId", "int64", "4+"),
              f("FirstOffset", "int64", "4+"),
              nullable="4+", ignorable=True),
            f("PreferredReadReplica", "int32", "11+", default=-1),
            f("Records", "records", "0+", nullable="0+", null_default=True))),
        f("NodeEndpoints", "[]NodeEndpoint", "16+",
          f("NodeId", "int32", "16+", map_key=True),
          f("Host", "string", "16+"),
          f("Port", "int32", "16+"),
          f("Rack", "string", "16+", nullable="16+", null_default=True),
          tag=0),
    ),
)  # fmt: skip

MESSAGES = (FETCH_REQUEST, FETCH_RESPONSE)

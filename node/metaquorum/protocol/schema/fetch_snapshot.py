"""FetchSnapshot (api key 59), versions 0-1, flexible 0+ (KIP-630, KIP-853 v1).

v1 adds a tagged ReplicaDirectoryId per partition in the request and tagged NodeEndpoints in the
response. Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

FETCH_SNAPSHOT_REQUEST = Message(
    "FetchSnapshotRequest", "request", "0-1", "0+", api_key=59,
    fields=(
        f("ClusterId", "string", "0+", nullable="0+", null_default=True, tag=0),
        f("ReplicaId", "int32", "0+", default=-1),
        f("MaxBytes", "int32", "0+", default=0x7FFFFFFF),
        f("Topics", "[]TopicSnapshot", "0+",
          f("Name", "string", "0+"),
          f("Partitions", "[]PartitionSnapshot", "0+",
            f("Partition", "int32", "0+"),
            f("CurrentLeaderEpoch", "int32", "0+"),
            f("SnapshotId", "SnapshotId", "0+",
              f("EndOffset", "int64", "0+"),
              f("Epoch", "int32", "0+")),
            f("Position", "int64", "0+"),
            f("ReplicaDirectoryId", "uuid", "1+", tag=0, ignorable=True))),
    ),
)  # fmt: skip

FETCH_SNAPSHOT_RESPONSE = Message(
    "FetchSnapshotResponse", "response", "0-1", "0+", api_key=59,
    fields=(
        f("ThrottleTimeMs", "int32", "0+", ignorable=True),
        f("ErrorCode", "int16", "0+"),
        f("Topics", "[]TopicSnapshot", "0+",
          f("Name", "string", "0+"),
          f("Partitions", "[]PartitionSnapshot", "0+",
            f("Index", "int32", "0+"),
            f("ErrorCode", "int16", "0+"),
            f("SnapshotId", "SnapshotId", "0+",
              f("EndOffset", "int64", "0+"),
              f("Epoch", "int32", "0+")),
            f("CurrentLeader", "LeaderIdAndEpoch", "0+",
              f("LeaderId", "int32", "0+"),
              f("LeaderEpoch", "int32", "0+"),
              tag=0),
            f("Size", "int64", "0+"),
            f("Position", "int64", "0+"),
            f("UnalignedRecords", "records", "0+", null_default=True))),
        f("NodeEndpoints", "[]NodeEndpoint", "1+",
          f("NodeId", "int32", "1+", map_key=True),
          f("Host", "string", "1+"),
          f("Port", "uint16", "1+"),
          tag=0),
    ),
)  # fmt: skip

MESSAGES = (FETCH_SNAPSHOT_REQUEST, FETCH_SNAPSHOT_RESPONSE)

"""DescribeCluster (api key 60), versions 0-2, flexible 0+ (KIP-700, KIP-919 v1, KIP-1073 v2).

Used by admin clients against controllers (`--bootstrap-controller`): v1 adds EndpointType,
v2 adds IncludeFencedBrokers / IsFenced. Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

DESCRIBE_CLUSTER_REQUEST = Message(
    "DescribeClusterRequest", "request", "0-2", "0+", api_key=60,
    fields=(
        f("IncludeClusterAuthorizedOperations", "bool", "0+"),
        f("EndpointType", "int8", "1+", default=1),
        f("IncludeFencedBrokers", "bool", "2+"),
    ),
)  # fmt: skip

DESCRIBE_CLUSTER_RESPONSE = Message(
    "DescribeClusterResponse", "response", "0-2", "0+", api_key=60,
    fields=(
        f("ThrottleTimeMs", "int32", "0+"),
        f("ErrorCode", "int16", "0+"),
        f("ErrorMessage", "string", "0+", nullable="0+", null_default=True),
        f("EndpointType", "int8", "1+", default=1),
        f("ClusterId", "string", "0+"),
        f("ControllerId", "int32", "0+", default=-1),
        f("Brokers", "[]DescribeClusterBroker", "0+",
          f("BrokerId", "int32", "0+", map_key=True),
          f("Host", "string", "0+"),
          f("Port", "int32", "0+"),
          f("Rack", "string", "0+", nullable="0+", null_default=True),
          f("IsFenced", "bool", "2+")),
        f("ClusterAuthorizedOperations", "int32", "0+", default=-2147483648),
    ),
)  # fmt: skip

MESSAGES = (DESCRIBE_CLUSTER_REQUEST, DESCRIBE_CLUSTER_RESPONSE)

"""Produce (api key 0), versions 3-13 (Kafka 4 dropped 0-2), flexible 9+ (KIP-482).

The client append path of a KRaft node: a client writes record batches to
`__cluster_metadata` partition 0 and the leader answers (acks=-1) once they commit.
Milestones: v3 TransactionalId, v5 LogStartOffset, v8 RecordErrors / ErrorMessage (KIP-467),
v9 flexible, v10 tagged CurrentLeader and NodeEndpoints in the response (KIP-951), v11/v12
no layout change (KIP-890 transactions), v13 topic ids replace names (KIP-516).
Facts: Kafka 4.3.1 jar (ProduceRequestData / ProduceResponseData), checked by
tests/unit/protocol/test_schema_vs_kafka.py.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

PRODUCE_REQUEST = Message(
    "ProduceRequest", "request", "3-13", "9+", api_key=0,
    fields=(
        f("TransactionalId", "string", "3+", nullable="3+", null_default=True),
        f("Acks", "int16", "0+"),
        f("TimeoutMs", "int32", "0+"),
        f("TopicData", "[]TopicProduceData", "0+",
          f("Name", "string", "0-12", ignorable=True, map_key=True),
          f("TopicId", "uuid", "13+", ignorable=True, map_key=True),
          f("PartitionData", "[]PartitionProduceData", "0+",
            f("Index", "int32", "0+"),
            f("Records", "records", "0+", nullable="0+", null_default=True))),
    ),
)  # fmt: skip

PRODUCE_RESPONSE = Message(
    "ProduceResponse", "response", "3-13", "9+", api_key=0,
    fields=(
        f("Responses", "[]TopicProduceResponse", "0+",
          f("Name", "string", "0-12", ignorable=True, map_key=True),
          f("TopicId", "uuid", "13+", ignorable=True, map_key=True),
          f("PartitionResponses", "[]PartitionProduceResponse", "0+",
            f("Index", "int32", "0+"),
            f("ErrorCode", "int16", "0+"),
            f("BaseOffset", "int64", "0+"),
            f("LogAppendTimeMs", "int64", "2+", default=-1, ignorable=True),
            f("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
            f("RecordErrors", "[]BatchIndexAndErrorMessage", "8+",
              f("BatchIndex", "int32", "8+"),
              f("BatchIndexErrorMessage", "string", "8+", nullable="8+", null_default=True),
              ignorable=True),
            f("ErrorMessage", "string", "8+", nullable="8+", null_default=True,
              ignorable=True),
            f("CurrentLeader", "LeaderIdAndEpoch", "10+",
              f("LeaderId", "int32", "10+", default=-1),
              f("LeaderEpoch", "int32", "10+", default=-1),
              tag=0))),
        f("ThrottleTimeMs", "int32", "1+", ignorable=True),
        f("NodeEndpoints", "[]NodeEndpoint", "10+",
          f("NodeId", "int32", "10+", map_key=True),
          f("Host", "string", "10+"),
          f("Port", "int32", "10+"),
          f("Rack", "string", "10+", nullable="10+", null_default=True),
          tag=0),
    ),
)  # fmt: skip

MESSAGES = (PRODUCE_REQUEST, PRODUCE_RESPONSE)

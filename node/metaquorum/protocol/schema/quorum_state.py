"""QuorumStateData: the `quorum-state` file's contents (versions 0-1, flexible 0+).

The file itself is JSON (`data_version` + this message's JSON form); v1 (KIP-853) drops
ClusterId, AppliedOffset and CurrentVoters and adds VotedDirectoryId. Facts: Kafka 4.3.1's
kafka-raft jar (`org.apache.kafka.raft.generated.QuorumStateData`).
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

QUORUM_STATE_DATA = Message(
    "QuorumStateData", "data", "0-1", "0+",
    fields=(
        f("ClusterId", "string", "0"),
        f("LeaderId", "int32", "0+", default=-1),
        f("LeaderEpoch", "int32", "0+", default=-1),
        f("VotedId", "int32", "0+", default=-1),
        f("VotedDirectoryId", "uuid", "1+"),
        f("AppliedOffset", "int64", "0"),
        f("CurrentVoters", "[]Voter", "0", f("VoterId", "int32", "0"), nullable="0"),
    ),
)  # fmt: skip

MESSAGES = (QUORUM_STATE_DATA,)

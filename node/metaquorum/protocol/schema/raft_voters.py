"""AddRaftVoter (80, v0-1), RemoveRaftVoter (81, v0), UpdateRaftVoter (82, v0); flexible 0+.

KIP-853 dynamic voters; AddRaftVoter v1 adds AckWhenCommitted (default true, KIP-1186).
Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

LISTENER = (
    f("Name", "string", "0+", map_key=True),
    f("Host", "string", "0+"),
    f("Port", "uint16", "0+"),
)

ADD_RAFT_VOTER_REQUEST = Message(
    "AddRaftVoterRequest", "request", "0-1", "0+", api_key=80,
    fields=(
        f("ClusterId", "string", "0+", nullable="0+"),
        f("TimeoutMs", "int32", "0+"),
        f("VoterId", "int32", "0+"),
        f("VoterDirectoryId", "uuid", "0+"),
        f("Listeners", "[]Listener", "0+", *LISTENER),
        f("AckWhenCommitted", "bool", "1+", default=True),
    ),
)  # fmt: skip

ADD_RAFT_VOTER_RESPONSE = Message(
    "AddRaftVoterResponse", "response", "0-1", "0+", api_key=80,
    fields=(
        f("ThrottleTimeMs", "int32", "0+"),
        f("ErrorCode", "int16", "0+"),
        f("ErrorMessage", "string", "0+", nullable="0+", ignorable=True),
    ),
)  # fmt: skip

REMOVE_RAFT_VOTER_REQUEST = Message(
    "RemoveRaftVoterRequest", "request", "0", "0+", api_key=81,
    fields=(
        f("ClusterId", "string", "0+", nullable="0+"),
        f("VoterId", "int32", "0+"),
        f("VoterDirectoryId", "uuid", "0+"),
    ),
)  # fmt: skip

REMOVE_RAFT_VOTER_RESPONSE = Message(
    "RemoveRaftVoterResponse", "response", "0", "0+", api_key=81,
    fields=(
        f("ThrottleTimeMs", "int32", "0+"),
        f("ErrorCode", "int16", "0+"),
        f("ErrorMessage", "string", "0+", nullable="0+", ignorable=True),
    ),
)  # fmt: skip

UPDATE_RAFT_VOTER_REQUEST = Message(
    "UpdateRaftVoterRequest", "request", "0", "0+", api_key=82,
    fields=(
        f("ClusterId", "string", "0+", nullable="0+"),
        f("CurrentLeaderEpoch", "int32", "0+"),
        f("VoterId", "int32", "0+"),
        f("VoterDirectoryId", "uuid", "0+"),
        f("Listeners", "[]Listener", "0+", *LISTENER),
        f("KRaftVersionFeature", "KRaftVersionFeature", "0+",
          f("MinSupportedVersion", "int16", "0+"),
          f("MaxSupportedVersion", "int16", "0+")),
    ),
)  # fmt: skip

UPDATE_RAFT_VOTER_RESPONSE = Message(
    "UpdateRaftVoterResponse", "response", "0", "0+", api_key=82,
    fields=(
        f("ThrottleTimeMs", "int32", "0+"),
        f("ErrorCode", "int16", "0+"),
        f("CurrentLeader", "CurrentLeader", "0+",
          f("LeaderId", "int32", "0+", default=-1),
          f("LeaderEpoch", "int32", "0+", default=-1),
          f("Host", "string", "0+"),
          f("Port", "int32", "0+"),
          tag=0),
    ),
)  # fmt: skip

MESSAGES = (
    ADD_RAFT_VOTER_REQUEST,
    ADD_RAFT_VOTER_RESPONSE,
    REMOVE_RAFT_VOTER_REQUEST,
    REMOVE_RAFT_VOTER_RESPONSE,
    UPDATE_RAFT_VOTER_REQUEST,
    UPDATE_RAFT_VOTER_RESPONSE,
)

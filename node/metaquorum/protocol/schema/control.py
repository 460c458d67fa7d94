"""Values of KRaft control records: LeaderChangeMessage, SnapshotHeaderRecord,
SnapshotFooterRecord, KRaftVersionRecord, VotersRecord (all flexible 0+).

Kafka writes and reads every one of them at version 0 (LeaderChangeMessage declares 0-1 but v1's
VoterDirectoryId never reaches disk). KIP-595 (LeaderChange), KIP-630 (snapshot header/footer),
KIP-853 (KRaftVersion, Voters). Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, Struct, f

LEADER_CHANGE_MESSAGE = Message(
    "LeaderChangeMessage", "data", "0-1", "0+",
    fields=(
        f("Version", "int16", "0+"),
        f("LeaderId", "int32", "0+"),
        f("Voters", "[]Voter", "0+"),
        f("GrantingVoters", "[]Voter", "0+"),
    ),
    common_structs=(
        Struct("Voter", (
            f("VoterId", "int32", "0+"),
            f("VoterDirectoryId", "uuid", "1+"),
        )),
    ),
)  # fmt: skip

SNAPSHOT_HEADER_RECORD = Message(
    "SnapshotHeaderRecord", "data", "0", "0+",
    fields=(
        f("Version", "int16", "0+"),
        f("LastContainedLogTimestamp", "int64", "0+"),
    ),
)  # fmt: skip

SNAPSHOT_FOOTER_RECORD = Message(
    "SnapshotFooterRecord", "data", "0", "0+",
    fields=(f("Version", "int16", "0+"),),
)  # fmt: skip

KRAFT_VERSION_RECORD = Message(
    "KRaftVersionRecord", "data", "0", "0+",
    fields=(
        f("Version", "int16", "0+"),
        f("KRaftVersion", "int16", "0+"),
    ),
)  # fmt: skip

VOTERS_RECORD = Message(
    "VotersRecord", "data", "0", "0+",
    fields=(
        f("Version", "int16", "0+"),
        f("Voters", "[]Voter", "0+",
          f("VoterId", "int32", "0+"),
          f("VoterDirectoryId", "uuid", "0+"),
          f("Endpoints", "[]Endpoint", "0+",
            f("Name", "string", "0+", map_key=True),
            f("Host", "string", "0+"),
            f("Port", "uint16", "0+")),
          f("KRaftVersionFeature", "KRaftVersionFeature", "0+",
            f("MinSupportedVersion", "int16", "0+"),
            f("MaxSupportedVersion", "int16", "0+"))),
    ),
)  # fmt: skip

MESSAGES = (
    LEADER_CHANGE_MESSAGE,
    SNAPSHOT_HEADER_RECORD,
    SNAPSHOT_FOOTER_RECORD,
    KRAFT_VERSION_RECORD,
    VOTERS_RECORD,
)

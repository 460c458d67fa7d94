"""Generated message classes (see `metaquorum.protocol.codegen`).

`MESSAGES` maps Kafka's message name (VoteRequest, VotersRecord, ...) to its class;
`REQUESTS` / `RESPONSES` map an api key to its request / response class.
"""

from __future__ import annotations

from metaquorum.protocol._codec import KafkaMessage
from metaquorum.protocol.messages.headers import RequestHeaderData, ResponseHeaderData
from metaquorum.protocol.messages.api_versions import (
    ApiVersionsRequestData,
    ApiVersionsResponseData,
)
from metaquorum.protocol.messages.vote import VoteRequestData, VoteResponseData
from metaquorum.protocol.messages.quorum_epoch import (
    BeginQuorumEpochRequestData,
    BeginQuorumEpochResponseData,
    EndQuorumEpochRequestData,
    EndQuorumEpochResponseData,
)
from metaquorum.protocol.messages.describe_quorum import (
    DescribeQuorumRequestData,
    DescribeQuorumResponseData,
)
from metaquorum.protocol.messages.fetch import FetchRequestData, FetchResponseData
from metaquorum.protocol.messages.fetch_snapshot import (
    FetchSnapshotRequestData,
    FetchSnapshotResponseData,
)
from metaquorum.protocol.messages.describe_cluster import (
    DescribeClusterRequestData,
    DescribeClusterResponseData,
)
from metaquorum.protocol.messages.raft_voters import (
    AddRaftVoterRequestData,
    AddRaftVoterResponseData,
    RemoveRaftVoterRequestData,
    RemoveRaftVoterResponseData,
    UpdateRaftVoterRequestData,
    UpdateRaftVoterResponseData,
)
from metaquorum.protocol.messages.control import (
    LeaderChangeMessage,
    SnapshotHeaderRecord,
    SnapshotFooterRecord,
    KRaftVersionRecord,
    VotersRecord,
)
from metaquorum.protocol.messages.quorum_state import QuorumStateData
from metaquorum.protocol.messages.produce import ProduceRequestData, ProduceResponseData

MESSAGES: dict[str, type[KafkaMessage]] = {
    "RequestHeader": RequestHeaderData,
    "ResponseHeader": ResponseHeaderData,
    "ApiVersionsRequest": ApiVersionsRequestData,
    "ApiVersionsResponse": ApiVersionsResponseData,
    "VoteRequest": VoteRequestData,
    "VoteResponse": VoteResponseData,
    "BeginQuorumEpochRequest": BeginQuorumEpochRequestData,
    "BeginQuorumEpochResponse": BeginQuorumEpochResponseData,
    "EndQuorumEpochRequest": EndQuorumEpochRequestData,
    "EndQuorumEpochResponse": EndQuorumEpochResponseData,
    "DescribeQuorumRequest": DescribeQuorumRequestData,
    "DescribeQuorumResponse": DescribeQuorumResponseData,
    "FetchRequest": FetchRequestData,
    "FetchResponse": FetchResponseData,
    "FetchSnapshotRequest": FetchSnapshotRequestData,
    "FetchSnapshotResponse": FetchSnapshotResponseData,
    "DescribeClusterRequest": DescribeClusterRequestData,
    "DescribeClusterResponse": DescribeClusterResponseData,
    "AddRaftVoterRequest": AddRaftVoterRequestData,
    "AddRaftVoterResponse": AddRaftVoterResponseData,
    "RemoveRaftVoterRequest": RemoveRaftVoterRequestData,
    "RemoveRaftVoterResponse": RemoveRaftVoterResponseData,
    "UpdateRaftVoterRequest": UpdateRaftVoterRequestData,
    "UpdateRaftVoterResponse": UpdateRaftVoterResponseData,
    "LeaderChangeMessage": LeaderChangeMessage,
    "SnapshotHeaderRecord": SnapshotHeaderRecord,
    "SnapshotFooterRecord": SnapshotFooterRecord,
    "KRaftVersionRecord": KRaftVersionRecord,
    "VotersRecord": VotersRecord,
    "QuorumStateData": QuorumStateData,
    "ProduceRequest": ProduceRequestData,
    "ProduceResponse": ProduceResponseData,
}

REQUESTS: dict[int, type[KafkaMessage]] = {
    18: ApiVersionsRequestData,
    52: VoteRequestData,
    53: BeginQuorumEpochRequestData,
    54: EndQuorumEpochRequestData,
    55: DescribeQuorumRequestData,
    1: FetchRequestData,
    59: FetchSnapshotRequestData,
    60: DescribeClusterRequestData,
    80: AddRaftVoterRequestData,
    81: RemoveRaftVoterRequestData,
    82: UpdateRaftVoterRequestData,
    0: ProduceRequestData,
}

RESPONSES: dict[int, type[KafkaMessage]] = {
    18: ApiVersionsResponseData,
    52: VoteResponseData,
    53: BeginQuorumEpochResponseData,
    54: EndQuorumEpochResponseData,
    55: DescribeQuorumResponseData,
    1: FetchResponseData,
    59: FetchSnapshotResponseData,
    60: DescribeClusterResponseData,
    80: AddRaftVoterResponseData,
    81: RemoveRaftVoterResponseData,
    82: UpdateRaftVoterResponseData,
    0: ProduceResponseData,
}

__all__ = [
    "AddRaftVoterRequestData",
    "AddRaftVoterResponseData",
    "ApiVersionsRequestData",
    "ApiVersionsResponseData",
    "BeginQuorumEpochRequestData",
    "BeginQuorumEpochResponseData",
    "DescribeClusterRequestData",
    "DescribeClusterResponseData",
    "DescribeQuorumRequestData",
    "DescribeQuorumResponseData",
    "EndQuorumEpochRequestData",
    "EndQuorumEpochResponseData",
    "FetchRequestData",
    "FetchResponseData",
    "FetchSnapshotRequestData",
    "FetchSnapshotResponseData",
    "KRaftVersionRecord",
    "LeaderChangeMessage",
    "ProduceRequestData",
    "ProduceResponseData",
    "QuorumStateData",
    "RemoveRaftVoterRequestData",
    "RemoveRaftVoterResponseData",
    "RequestHeaderData",
    "ResponseHeaderData",
    "SnapshotFooterRecord",
    "SnapshotHeaderRecord",
    "UpdateRaftVoterRequestData",
    "UpdateRaftVoterResponseData",
    "VoteRequestData",
    "VoteResponseData",
    "VotersRecord",
    "MESSAGES",
    "REQUESTS",
    "RESPONSES",
    "KafkaMessage",
]

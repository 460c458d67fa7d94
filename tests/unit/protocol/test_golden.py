"""Hand-computed bytes from the encoding rules (reference §2.2-§2.4), tagged fields, versions.

Each expected byte string below is written out from the rules, not copied from our output:
compact string = varint(len+1) + UTF-8; compact array = varint(n+1); an empty tagged section is
0x00; int16/int32/int64 big-endian; non-flexible strings have an int16 length (-1 = null).
"""

from __future__ import annotations

import pytest
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import (
    ApiVersionsResponseData,
    BeginQuorumEpochRequestData,
    FetchRequestData,
    FetchResponseData,
    FetchSnapshotRequestData,
    LeaderChangeMessage,
    RequestHeaderData,
    ResponseHeaderData,
    VoteRequestData,
)
from metaquorum.protocol.types import RawTaggedField, Uuid


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


VOTE_V0 = VoteRequestData(
    cluster_id="c",
    topics=[
        VoteRequestData.TopicData(
            topic_name="t",
            partitions=[
                VoteRequestData.PartitionData(
                    partition_index=0, replica_epoch=5, replica_id=1, last_offset_epoch=4,
                    last_offset=100,
                )
            ],
        )
    ],
)  # fmt: skip
VOTE_V0_BYTES = h(
    "02 63"  # clusterId: compact nullable string "c"
    " 02"  # topics: 1 element
    " 02 74"  # topicName "t"
    " 02"  # partitions: 1 element
    " 00000000 00000005 00000001 00000004 0000000000000064"  # index, epoch, id, lastEpoch, lastOff
    " 00 00 00"  # tagged sections: partition, topic, message
)


def test_vote_request_v0_golden() -> None:
    assert VOTE_V0.encode(0) == VOTE_V0_BYTES
    assert VoteRequestData.decode(VOTE_V0_BYTES, 0) == VOTE_V0


def test_begin_quorum_epoch_v0_non_flexible_golden() -> None:
    msg = BeginQuorumEpochRequestData(
        cluster_id=None,
        topics=[
            BeginQuorumEpochRequestData.TopicData(
                topic_name="t",
                partitions=[
                    BeginQuorumEpochRequestData.PartitionData(
                        partition_index=0, leader_id=2, leader_epoch=7
                    )
                ],
            )
        ],
    )
    expected = h("ffff 00000001 0001 74 00000001 00000000 00000002 00000007")
    assert msg.encode(0) == expected
    assert BeginQuorumEpochRequestData.decode(expected, 0) == msg


def test_request_header_v2_keeps_int16_client_id() -> None:
    hdr = RequestHeaderData(
        request_api_key=52, request_api_version=2, correlation_id=9, client_id="ab"
    )
    assert hdr.encode(2) == h("0034 0002 00000009 0002 6162 00")
    assert hdr.encode(1) == h("0034 0002 00000009 0002 6162")
    assert RequestHeaderData(client_id=None).encode(1) == h("0000 0000 00000000 ffff")
    assert RequestHeaderData.decode(h("0034 0002 00000009 0002 6162 00"), 2) == hdr


def test_response_header_versions() -> None:
    assert ResponseHeaderData(correlation_id=7).encode(0) == h("00000007")
    assert ResponseHeaderData(correlation_id=7).encode(1) == h("00000007 00")


def test_tagged_cluster_id_written_only_when_set() -> None:
    base = FetchSnapshotRequestData()
    # replicaId -1, maxBytes 0x7fffffff, topics empty, empty tagged section
    assert base.encode(0) == h("ffffffff 7fffffff 01 00")
    tagged = FetchSnapshotRequestData(cluster_id="x")
    # one tagged field: tag 0, size 2, compact nullable string "x"
    assert tagged.encode(0) == h("ffffffff 7fffffff 01 01 00 02 02 78")
    assert FetchSnapshotRequestData.decode(tagged.encode(0), 0) == tagged


def test_tagged_int64_and_bool_in_tag_order() -> None:
    msg = ApiVersionsResponseData(finalized_features_epoch=5, zk_migration_ready=True)
    expected = h(
        "0000"  # errorCode
        " 01"  # apiKeys: empty compact array
        " 00000000"  # throttleTimeMs
        " 02 01 08 0000000000000005 03 01 01"  # 2 tagged: tag 1 (int64 5), tag 3 (true)
    )
    assert msg.encode(3) == expected
    assert ApiVersionsResponseData.decode(expected, 3) == msg
    # v0 (non-flexible) has none of them: ignorable, so silently dropped
    assert msg.encode(0) == h("0000 00000000")


def test_unknown_tags_kept_and_merged_in_tag_order() -> None:
    unknown = [RawTaggedField(5, b"\xaa"), RawTaggedField(9, b"")]
    msg = FetchResponseData(
        node_endpoints=[FetchResponseData.NodeEndpoint(node_id=1, host="h", port=9, rack=None)],
        unknown_tagged_fields=unknown,
    )
    body = h(
        "00000000 0000 00000000 01"  # throttle, error, session, responses empty
        " 03"  # three tagged fields
        " 00 0d 02 00000001 02 68 00000009 00 00"  # tag 0: nodeEndpoints [1, "h", 9, null]
        " 05 01 aa"  # unknown tag 5
        " 09 00"  # unknown tag 9
    )
    assert msg.encode(16) == body
    assert FetchResponseData.decode(body, 16) == msg


def test_non_ignorable_field_refused_in_old_version() -> None:
    with_pre_vote = VoteRequestData(
        topics=[
            VoteRequestData.TopicData(partitions=[VoteRequestData.PartitionData(pre_vote=True)])
        ]
    )
    with pytest.raises(ProtocolError, match="non-default preVote at version 1"):
        with_pre_vote.encode(1)
    # VoterId is ignorable: v0 silently drops it
    assert VoteRequestData(voter_id=3).encode(0) == VoteRequestData().encode(0)
    with pytest.raises(ProtocolError, match="replicaState"):
        FetchRequestData(replica_state=FetchRequestData.ReplicaState(1, 2)).encode(14)
    with pytest.raises(ProtocolError, match="voterDirectoryId"):
        LeaderChangeMessage(
            voters=[LeaderChangeMessage.Voter(voter_id=1, voter_directory_id=Uuid.ONE)]
        ).encode(0)


def test_unknown_tags_refused_in_non_flexible_version() -> None:
    msg = BeginQuorumEpochRequestData(unknown_tagged_fields=[RawTaggedField(3, b"")])
    with pytest.raises(ProtocolError, match="Tagged fields were set"):
        msg.encode(0)
    assert BeginQuorumEpochRequestData.decode(msg.encode(1), 1) == msg


def test_tag_of_a_later_version_is_refused() -> None:
    # Fetch v12 knows tag 0 (ClusterId) only; tag 1 (ReplicaState) exists from v15.
    v12 = FetchRequestData().encode(12)
    assert v12[-1] == 0
    bad = v12[:-1] + h("01 01 00")  # one tagged field, tag 1, size 0
    with pytest.raises(ProtocolError, match="Tag 1 is not valid for version 12"):
        FetchRequestData.decode(bad, 12)
    ok = v12[:-1] + h("01 07 00")  # tag 7 is unknown in every version: kept
    assert FetchRequestData.decode(ok, 12).unknown_tagged_fields == [RawTaggedField(7, b"")]


def test_unsupported_versions_and_trailing_bytes() -> None:
    with pytest.raises(ProtocolError, match="unsupported version 3"):
        FetchRequestData().encode(3)
    with pytest.raises(ProtocolError, match="unsupported version 19"):
        FetchRequestData.decode(b"", 19)
    with pytest.raises(ProtocolError, match="trailing"):
        VoteRequestData.decode(VOTE_V0_BYTES + b"\x00", 0)


def test_out_of_range_value_is_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="out of range"):
        VoteRequestData(voter_id=2**31).encode(1)
    with pytest.raises(ProtocolError, match="null"):
        from metaquorum.protocol.messages import FetchSnapshotResponseData as R

        R(topics=[R.TopicSnapshot(partitions=[R.PartitionSnapshot()])]).encode(0)


def test_records_field_is_bytes_or_none() -> None:
    part = FetchResponseData.PartitionData(records=b"\x01\x02")
    msg = FetchResponseData(responses=[FetchResponseData.FetchableTopicResponse(partitions=[part])])
    back = FetchResponseData.decode(msg.encode(18), 18)
    assert back.responses[0].partitions[0].records == b"\x01\x02"
    null = FetchResponseData.PartitionData()
    msg2 = FetchResponseData(
        responses=[FetchResponseData.FetchableTopicResponse(partitions=[null])]
    )
    assert FetchResponseData.decode(msg2.encode(4), 4).responses[0].partitions[0].records is None


def test_unknown_tags_out_of_order_refused_on_decode_and_encode() -> None:
    body = VoteRequestData().encode(0)[:-1]
    ok = body + h("02 03 00 09 01 ff")  # unknown tags 3 then 9
    assert VoteRequestData.decode(ok, 0).unknown_tagged_fields == [
        RawTaggedField(3, b""),
        RawTaggedField(9, b"\xff"),
    ]
    for bad in (body + h("02 09 00 03 00"), body + h("02 03 00 03 00")):
        with pytest.raises(ProtocolError, match="out of order"):
            VoteRequestData.decode(bad, 0)
    unsorted = VoteRequestData(
        unknown_tagged_fields=[RawTaggedField(9, b""), RawTaggedField(3, b"")]
    )
    with pytest.raises(ProtocolError, match="ascending"):
        unsorted.encode(0)

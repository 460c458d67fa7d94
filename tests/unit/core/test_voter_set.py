"""`VoterSet` as Kafka's `VoterSet` (KIP-853): voters with directory ids and endpoints, from a
static `controller.quorum.voters`, from a VotersRecord, and Kafka's `isVoter` rule."""

from __future__ import annotations

import pytest
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
from metaquorum.protocol.messages.control import VotersRecord
from metaquorum.protocol.types import Uuid

DIR_A = Uuid.from_string("J8aAPcfLQt2bqs1JT_rMgQ")


def _record() -> VotersRecord:
    feature = VotersRecord.KRaftVersionFeature(min_supported_version=0, max_supported_version=1)
    return VotersRecord(
        version=0,
        voters=[
            VotersRecord.Voter(
                voter_id=2,
                voter_directory_id=DIR_A,
                endpoints=[
                    VotersRecord.Endpoint(name="CONTROLLER", host="h2", port=9093),
                    VotersRecord.Endpoint(name="OTHER", host="h2", port=9094),
                ],
                kraft_version_feature=feature,
            ),
            VotersRecord.Voter(voter_id=1, voter_directory_id=Uuid.ZERO, endpoints=[]),
        ],
    )


def test_from_voters_record_keeps_directory_ids_endpoints_and_versions() -> None:
    vs = VoterSet.from_voters_record(_record())
    assert vs.sorted_ids() == [1, 2]
    two = vs.node(2)
    assert two is not None and two.key == ReplicaKey(2, str(DIR_A))
    assert two.endpoint("OTHER") == ListenerEndpoint("OTHER", "h2", 9094)
    assert (two.kraft_version_min, two.kraft_version_max) == (0, 1)
    one = vs.node(1)
    assert one is not None and one.key.directory_id is None  # ZERO means none
    # A voter without an endpoint on the listener is left out of the endpoint map.
    assert vs.endpoints("CONTROLLER") == {2: ListenerEndpoint("CONTROLLER", "h2", 9093)}


def test_is_voter_follows_kafkas_rule() -> None:
    vs = VoterSet.from_voters_record(_record())
    assert vs.is_voter(ReplicaKey(2, str(DIR_A)))
    assert not vs.is_voter(ReplicaKey(2, "another-directory"))  # an observer with a voter's id
    assert not vs.is_voter(ReplicaKey(2))
    assert vs.is_voter(ReplicaKey(1, "any")) and vs.is_voter(ReplicaKey(1))  # no dir id: by id
    assert not vs.is_voter(ReplicaKey(3))


def test_static_voters_have_endpoints_and_no_directory_ids() -> None:
    vs = VoterSet.from_endpoints("CTRL", {1: ("a", 9093), 2: ("::1", 9094)})
    assert vs.endpoints("CTRL") == {
        1: ListenerEndpoint("CTRL", "a", 9093),
        2: ListenerEndpoint("CTRL", "::1", 9094),
    }
    assert all(n.key.directory_id is None for n in vs.nodes)
    assert vs.is_voter(ReplicaKey(2, "any directory"))  # a static set matches by id


def test_nodes_must_match_ids_and_be_unique() -> None:
    with pytest.raises(ValueError, match="exactly its voter ids"):
        VoterSet(frozenset({1, 2}), (VoterNode(ReplicaKey(1)),))
    with pytest.raises(ValueError, match="once"):
        VoterSet.from_nodes([VoterNode(ReplicaKey(1)), VoterNode(ReplicaKey(1, "x"))])
    # A set of bare ids (the simulator's) has no nodes and no endpoints.
    assert VoterSet.of([1, 2]).endpoints("CONTROLLER") == {}

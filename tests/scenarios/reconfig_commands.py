"""KIP-853 commands and renderings for the scenario scripts (issue 14).

`node ... kraft=1` starts a replica of a bootstrapped quorum: voter i has directory id
`Uuid(7, i)` and endpoint CONTROLLER://h<i>:<9090+i>; `dir=new` gives the local replica another
directory id (a wiped disk). Commands: `fetch ... dir=N|new` (the fetcher's directory id),
`add-voter from=A id=N [ack=false]`, `remove-voter from=A id=N [dir=new]`,
`update-voter from=N id=N epoch=E port=P`, `upgrade epoch=E version=V [validate]`;
`node ... kraft=0` starts a static (kraft.version 0) replica that knows its directory id,
`api-versions-response from=N [min=0] [max=1]`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from metaquorum.core.events import UpgradeKRaftVersion
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import EntryKind, LogEntry
from metaquorum.core.voter_set import ListenerEndpoint, VoterNode, VoterSet
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    AddRaftVoterResponseData,
    ApiVersionsRequestData,
    ApiVersionsResponseData,
    RemoveRaftVoterRequestData,
    RemoveRaftVoterResponseData,
    UpdateRaftVoterRequestData,
    UpdateRaftVoterResponseData,
    VotersRecord,
)
from metaquorum.protocol.types import Uuid

CLUSTER = "test-cluster-id-000000"


def directory(word: str, nid: int) -> Uuid:
    return Uuid(99, nid) if word == "new" else Uuid(7, int(word))


def endpoint(nid: int) -> ListenerEndpoint:
    return ListenerEndpoint("CONTROLLER", f"h{nid}", 9090 + nid)


def bootstrap_set(ids: list[int]) -> VoterSet:
    return VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, str(Uuid(7, i))), (endpoint(i),), 0, 1) for i in ids
    )


def node_kwargs(local: int, voters: list[int], args: dict[str, str]) -> dict[str, Any]:
    if args.get("kraft") == "0":  # a static quorum whose replicas know their directory ids
        return {
            "voter_set": VoterSet.from_nodes(
                VoterNode(ReplicaKey(i), (endpoint(i),), 0, 0) for i in voters
            ),
            "kraft_version": 0,
            "directory_id": str(directory(args.get("dir", str(local)), local)),
            "endpoints": (endpoint(local),),
        }
    if args.get("kraft") != "1":
        return {}
    return {
        "voter_set": bootstrap_set(voters),
        "kraft_version": 1,
        "directory_id": str(directory(args.get("dir", str(local)), local)),
        "endpoints": (endpoint(local),),
    }


def with_fetch_directory(msg: Any, src: int, args: dict[str, str]) -> Any:
    if "dir" not in args:
        return msg
    p = replace(msg.topics[0].partitions[0], replica_directory_id=directory(args["dir"], src))
    return replace(msg, topics=[replace(msg.topics[0], partitions=[p])])


def command(name: str, args: dict[str, str]) -> object | None:
    """The request or response message of a KIP-853 command, or None if not one."""
    if name == "add-voter":
        nid = int(args["id"])
        ep = endpoint(nid)
        return AddRaftVoterRequestData(
            cluster_id=CLUSTER,
            voter_id=nid,
            voter_directory_id=directory(args.get("dir", str(nid)), nid),
            listeners=[AddRaftVoterRequestData.Listener(name=ep.name, host=ep.host, port=ep.port)],
            ack_when_committed=args.get("ack", "true") == "true",
        )
    if name == "remove-voter":
        nid = int(args["id"])
        return RemoveRaftVoterRequestData(
            cluster_id=CLUSTER,
            voter_id=nid,
            voter_directory_id=directory(args.get("dir", str(nid)), nid),
        )
    if name == "update-voter":
        nid = int(args["id"])
        ep = ListenerEndpoint("CONTROLLER", f"h{nid}", int(args["port"]))
        return UpdateRaftVoterRequestData(
            cluster_id=CLUSTER,
            current_leader_epoch=int(args["epoch"]),
            voter_id=nid,
            voter_directory_id=directory(args.get("dir", str(nid)), nid),
            listeners=[
                UpdateRaftVoterRequestData.Listener(name=ep.name, host=ep.host, port=ep.port)
            ],
            kraft_version_feature=UpdateRaftVoterRequestData.KRaftVersionFeature(
                min_supported_version=0, max_supported_version=1
            ),
        )
    if name == "upgrade":
        return UpgradeKRaftVersion(int(args["epoch"]), int(args["version"]), "validate" in args)
    if name == "api-versions-response":
        key = ApiVersionsResponseData.SupportedFeatureKey(
            name="kraft.version",
            min_version=int(args.get("min", 0)),
            max_version=int(args.get("max", 1)),
        )
        return ApiVersionsResponseData(supported_features=[key])
    return None


def render(msg: object) -> str | None:
    if isinstance(msg, ApiVersionsRequestData):
        return "ApiVersions"
    if isinstance(msg, UpdateRaftVoterResponseData):
        leader = msg.current_leader
        return (
            f"UpdateRaftVoterResponse error={msg.error_code} leader={leader.leader_id}/"
            f"{leader.leader_epoch} at={leader.host}:{leader.port}"
        )
    if isinstance(msg, UpdateRaftVoterRequestData):
        ep = msg.listeners[0]
        at = f"{ep.host}:{ep.port}"
        return f"UpdateRaftVoter id={msg.voter_id} epoch={msg.current_leader_epoch} at={at}"
    if isinstance(msg, AddRaftVoterResponseData | RemoveRaftVoterResponseData):
        name = type(msg).__name__.removesuffix("Data")
        return f"{name} error={msg.error_code}" + (
            f" ({msg.error_message})" if msg.error_message else ""
        )
    return None


def render_entry(x: LogEntry) -> str:
    if x.kind is EntryKind.KRAFT_VOTERS and isinstance(x.control, VotersRecord):
        ids = ",".join(str(v.voter_id) for v in x.control.voters)
        return f"{x.offset}@{x.epoch}(voters={ids})"
    if x.kind is EntryKind.KRAFT_VERSION:
        return f"{x.offset}@{x.epoch}(kraft-version)"
    if x.kind is EntryKind.LEADER_CHANGE:
        return f"{x.offset}@{x.epoch}(leader-change)"
    return f"{x.offset}@{x.epoch}"

"""Messages in flight and their text for the multi-node scenario scripts (`multinode.py`).

Role: one queued message (`Message`, with its rendering as the transcripts print it), the
argument parsing of the script's commands, the filters of `deliver` / `drop`, and the small
fixtures the environment hands its replicas (the bootstrap voter set `format` writes, the
runtime's ApiVersions answer). Invariant: rendering is a pure function of the message, so a
transcript depends only on what the core emitted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import LogEntry
from metaquorum.core.states import ElectionState
from metaquorum.core.voter_set import VoterNode, VoterSet
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    ApiVersionsResponseData,
    RemoveRaftVoterRequestData,
)

from tests.scenarios import reconfig_commands as reconfig
from tests.scenarios.runner import render_message

ADMIN = 99  # the admin client's "replica id": its requests come from it, answers go to it


def parse_ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def parse_args(words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        key, eq, value = w.partition("=")
        out[key] = value if eq else "true"
    return out


def _name(nid: int) -> str:
    return "admin" if nid == ADMIN else str(nid)


def render_body(msg: object) -> str:
    """A message as one line (the single-node runner's rendering, plus the admin's requests)."""
    if isinstance(msg, AddRaftVoterRequestData):
        ep = msg.listeners[0]
        return (
            f"AddRaftVoter id={msg.voter_id} dir={_dir(msg.voter_id, str(msg.voter_directory_id))}"
            f" at={ep.host}:{ep.port} ack-when-committed={str(msg.ack_when_committed).lower()}"
        )
    if isinstance(msg, RemoveRaftVoterRequestData):
        return (
            f"RemoveRaftVoter id={msg.voter_id} "
            f"dir={_dir(msg.voter_id, str(msg.voter_directory_id))}"
        )
    if isinstance(msg, ApiVersionsResponseData):
        features = " ".join(
            f"{f.name}={f.min_version}-{f.max_version}" for f in msg.supported_features
        )
        return f"ApiVersionsResponse {features}"
    return render_message(msg)


def _dir(nid: int, directory: str | None) -> str:
    """A directory id as the script names it: the replica's own (its id) or `new`."""
    if directory is None:
        return "none"
    if directory == str(reconfig.directory(str(nid), nid)):
        return str(nid)
    if directory == str(reconfig.directory("new", nid)):
        return "new"
    return directory


@dataclass
class Message:
    """One message in flight. `reply_as` is the id the requester sent a request to (a
    bootstrap pseudo-id), under which it expects the answer."""

    src: int
    dst: int
    correlation_id: int
    body: object
    is_response: bool
    entries: tuple[LogEntry, ...] = ()
    reply_as: int | None = None

    @property
    def kind(self) -> str:
        return render_body(self.body).split(" ", 1)[0]

    def render(self) -> str:
        via = f" (as {self.reply_as})" if self.reply_as is not None else ""
        recs = ""
        if self.entries:
            recs = " records=" + ",".join(f"{x.offset}@{x.epoch}" for x in self.entries)
        return f"{_name(self.src)}->{_name(self.dst)}{via} {render_body(self.body)}{recs}"


def ids_text(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(i) for i in sorted(ids)) + "]"


def election_text(e: ElectionState) -> str:
    voted = "-1" if e.voted_key is None else str(e.voted_key.id)
    return f"epoch={e.epoch} leader={e.leader_id} voted={voted}"


def bootstrap_set(ids: list[int]) -> VoterSet:
    """The VotersRecord `format --standalone / --initial-controllers` writes."""
    return VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, str(reconfig.directory(str(i), i))), (reconfig.endpoint(i),), 0, 1)
        for i in ids
    )


def api_versions_answer() -> ApiVersionsResponseData:
    """What a replica's runtime answers: it supports kraft.version 0-1."""
    key = ApiVersionsResponseData.SupportedFeatureKey(
        name="kraft.version", min_version=0, max_version=1
    )
    return ApiVersionsResponseData(supported_features=[key])


def matches(m: Message, a: dict[str, str]) -> bool:
    def ids(key: str) -> set[int]:
        return {ADMIN if x == "admin" else int(x) for x in a[key].split(",") if x}

    if "from" in a and m.src not in ids("from"):
        return False
    if "to" in a and m.dst not in ids("to"):
        return False
    return "type" not in a or m.kind in a["type"].split(",")

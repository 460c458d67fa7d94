"""The `quorum-state` file: a replica's durable election state (reference §4.3; KIP-595, KIP-853).

Role: read and write the one-line compact JSON Kafka's FileQuorumStateStore uses: the JSON form
of QuorumStateData plus `data_version` (0 for kraft.version 0, 1 for kraft.version 1).

    v1: {"leaderId":-1,"leaderEpoch":2,"votedId":1,
         "votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}
    v0: {"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,
         "currentVoters":[],"data_version":0}

Invariants: written to `quorum-state.tmp`, fsync'd, renamed over `quorum-state`, directory
fsync'd, so a crash leaves either the old or the new state; only the first line is read; a
file that is not a JSON object with the fields of its data_version (0 or 1) is refused with an
error naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.types import Uuid
from metaquorum.storage.fsutil import atomic_write

QUORUM_STATE = "quorum-state"


class QuorumStateError(ProtocolError):
    """A quorum-state file that cannot be trusted."""


@dataclass(frozen=True, slots=True)
class QuorumStateFile:
    """The persisted election state: who leads (if known) and who got our vote, per epoch."""

    leader_id: int = -1
    leader_epoch: int = 0
    voted_id: int = -1
    voted_directory_id: Uuid = Uuid.ZERO
    data_version: int = 1

    def to_json(self) -> str:
        doc: dict[str, Any]
        if self.data_version == 0:
            doc = {
                "clusterId": "",
                "leaderId": self.leader_id,
                "leaderEpoch": self.leader_epoch,
                "votedId": self.voted_id,
                "appliedOffset": 0,
                "currentVoters": [],
            }
        elif self.data_version == 1:
            doc = {
                "leaderId": self.leader_id,
                "leaderEpoch": self.leader_epoch,
                "votedId": self.voted_id,
                "votedDirectoryId": str(self.voted_directory_id),
            }
        else:
            raise ValueError(f"quorum-state data_version {self.data_version} is not 0 or 1")
        doc["data_version"] = self.data_version
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, source: str = QUORUM_STATE) -> QuorumStateFile:
        first = text.split("\n", 1)[0]
        try:
            doc = json.loads(first)
        except json.JSONDecodeError as e:
            raise QuorumStateError(f"{source}: not JSON ({e.msg} at char {e.pos})") from None
        if not isinstance(doc, dict):
            raise QuorumStateError(f"{source}: expected a JSON object")
        version = doc.get("data_version")
        if not isinstance(version, int) or isinstance(version, bool) or version not in (0, 1):
            raise QuorumStateError(f"{source}: data_version {version!r} is not 0 or 1")

        def int_field(name: str) -> int:
            value = doc.get(name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise QuorumStateError(f"{source}: field {name!r} missing or not an int")
            return value

        voted_dir = Uuid.ZERO
        if version == 1:
            raw = doc.get("votedDirectoryId")
            if not isinstance(raw, str):
                raise QuorumStateError(f"{source}: field 'votedDirectoryId' missing")
            try:
                voted_dir = Uuid.from_string(raw)
            except ValueError as e:
                raise QuorumStateError(f"{source}: bad votedDirectoryId: {e}") from None
        return cls(
            leader_id=int_field("leaderId"),
            leader_epoch=int_field("leaderEpoch"),
            voted_id=int_field("votedId"),
            voted_directory_id=voted_dir,
            data_version=version,
        )


def read_quorum_state(partition_dir: Path) -> QuorumStateFile | None:
    """The stored election state, or None when the file does not exist (a fresh replica)."""
    path = partition_dir / QUORUM_STATE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise QuorumStateError(f"{path}: not UTF-8 at byte {e.start}") from None
    return QuorumStateFile.from_json(text, str(path))


def write_quorum_state(partition_dir: Path, state: QuorumStateFile, *, fsync: bool = True) -> None:
    atomic_write(partition_dir / QUORUM_STATE, state.to_json().encode("utf-8"), fsync=fsync)

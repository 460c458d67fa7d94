"""The manifest of a backup: what it holds, and the proof that nothing in it changed.

Role: `Manifest` names the cluster, the offsets the backup covers (`start`: the snapshot's end
offset, or 0 without a snapshot; `end`: exclusive, every record below it committed when the
backup was taken), the epochs at both ends, the voter set and kraft.version as of `end`, the
software that wrote it, and every data file with its size and SHA-256.

Invariants:
- the manifest is the last object a backup writes, so a backup without one is incomplete and
  never listed (`list_backups` lists names that have a manifest);
- the file is canonical JSON (sorted keys, no whitespace) with a `checksum` field holding the
  SHA-256 of the canonical JSON of everything else; `Manifest.parse` refuses a file whose bytes
  are not exactly the canonical form of what it parses to, or whose checksum differs, so one
  flipped byte anywhere in it is caught.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


class BackupError(Exception):
    """A refused or failed backup operation; the message is one line naming the fix."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    name: str
    kind: str  # "snapshot" | "segment"
    size: int
    sha256: str
    base_offset: int  # snapshot: its end offset; segment: its first offset
    end_offset: int  # exclusive


@dataclass(frozen=True, slots=True)
class VoterEntry:
    id: int
    directory_id: str
    endpoints: list[str]  # NAME://host:port


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    cluster_id: str
    created_ms: int
    software_version: str
    start_offset: int
    start_epoch: int
    end_offset: int
    end_epoch: int
    kraft_version: int
    voters: list[VoterEntry]
    voters_source: str  # "log" (a VotersRecord in the backup) | "describe-quorum"
    leader_id: int
    leader_epoch: int
    files: list[FileEntry] = field(default_factory=list)
    format_version: int = FORMAT_VERSION

    @property
    def snapshot(self) -> FileEntry | None:
        return next((f for f in self.files if f.kind == "snapshot"), None)

    @property
    def segments(self) -> list[FileEntry]:
        return sorted((f for f in self.files if f.kind == "segment"), key=lambda f: f.base_offset)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def to_bytes(self) -> bytes:
        body = asdict(self)
        doc = {**body, "checksum": _digest(body)}
        return _canonical(doc)

    @classmethod
    def parse(cls, data: bytes, where: str) -> Manifest:
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise BackupError(
                f"{where}: manifest is not JSON ({e}): the backup is damaged"
            ) from None
        if not isinstance(doc, dict) or _canonical(doc) != data:
            raise BackupError(f"{where}: manifest bytes were altered: the backup is damaged")
        checksum = doc.pop("checksum", None)
        if checksum != _digest(doc):
            raise BackupError(f"{where}: manifest checksum mismatch: the backup is damaged")
        if doc.get("format_version") != FORMAT_VERSION:
            raise BackupError(
                f"{where}: manifest format {doc.get('format_version')!r}, this tool reads "
                f"{FORMAT_VERSION}: use the metaquorum version that wrote it"
            )
        try:
            files = [FileEntry(**f) for f in doc.pop("files")]
            voters = [VoterEntry(**v) for v in doc.pop("voters")]
            return cls(**doc, files=files, voters=voters)
        except (TypeError, KeyError) as e:
            raise BackupError(f"{where}: manifest fields are wrong ({e})") from None


def _canonical(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _digest(body: Any) -> str:
    return hashlib.sha256(_canonical(body)).hexdigest()

"""`meta.properties`: the identity of a formatted log directory (reference §4.2).

Role: read and write the Java Properties file Kafka's MetaProperties/PropertiesUtils use:
`version` (0 legacy, 1 KRaft), `cluster.id`, `node.id` and `directory.id`.

Invariants: written atomically (`meta.properties.tmp`, fsync, rename, dir fsync) in
`Properties.store` form (a `#` comment line, a `#<date>` line, `key=value` lines with Java's
escaping); read with Java's `Properties.load` rules; a version-1 file must carry `node.id`
and `cluster.id`, and unknown versions are refused, with errors naming the file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.types import Uuid
from metaquorum.storage.fsutil import atomic_write

META_PROPERTIES = "meta.properties"


class MetaPropertiesError(ProtocolError):
    """A meta.properties file that is unreadable or not what this node expects."""


@dataclass(frozen=True, slots=True)
class MetaProperties:
    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: Uuid | None = None

    def to_properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        if self.node_id is not None:
            props["node.id" if self.version == 1 else "broker.id"] = str(self.node_id)
        if self.directory_id is not None:
            props["directory.id"] = str(self.directory_id)
        props["version"] = str(self.version)
        if self.cluster_id is not None:
            props["cluster.id"] = self.cluster_id
        return props

    @classmethod
    def from_properties(
        cls, props: dict[str, str], source: str = "meta.properties"
    ) -> MetaProperties:
        raw_version = props.get("version")
        if raw_version is None:
            raise MetaPropertiesError(f"{source}: no 'version' key")
        if raw_version not in ("0", "1"):
            raise MetaPropertiesError(
                f"{source}: unknown version {raw_version!r} (expected 0 or 1)"
            )
        version = int(raw_version)
        id_key = "node.id" if version == 1 else "broker.id"
        node_id: int | None = None
        if id_key in props:
            try:
                node_id = int(props[id_key])
            except ValueError:
                raise MetaPropertiesError(
                    f"{source}: {id_key} {props[id_key]!r} is not an int"
                ) from None
        cluster_id = props.get("cluster.id")
        if version == 1 and (node_id is None or cluster_id is None):
            raise MetaPropertiesError(f"{source}: version 1 needs both node.id and cluster.id")
        directory_id: Uuid | None = None
        if "directory.id" in props:
            try:
                directory_id = Uuid.from_string(props["directory.id"])
            except ValueError as e:
                raise MetaPropertiesError(f"{source}: bad directory.id: {e}") from None
        return cls(version, cluster_id, node_id, directory_id)


# --- Java Properties text form ----------------------------------------------------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == " " and (is_key or i == 0):
            out.append("\\ ")
        elif ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        else:
            out.append(ch)
    return "".join(out)


def dump_properties(props: dict[str, str], comment: str = "", now: float | None = None) -> str:
    """Text as Java's `Properties.store(writer, comment)` writes it."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(now))
    lines = [f"#{comment}", f"#{stamp}"]
    lines += [f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending else raw
        if not pending and (not line.strip() or line.lstrip(" \t\f")[:1] in ("#", "!")):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                except ValueError:
                    raise ValueError(f"malformed \\uxxxx escape {text[i : i + 6]!r}") from None
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse text as Java's `Properties.load` does (comments, separators, escapes)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        line = line.lstrip(" \t\f")
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == "\\":
                i += 2
                continue
            if ch in "=: \t\f":
                break
            i += 1
        key, rest = line[:i], line[i:]
        rest = rest.lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        props[_unescape(key)] = _unescape(rest)
    return props


def read_meta_properties(log_dir: Path) -> MetaProperties | None:
    """The directory's meta.properties, or None if it has none."""
    path = log_dir / META_PROPERTIES
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as e:
        raise MetaPropertiesError(f"{path}: not UTF-8 text at byte {e.start}") from None
    try:
        props = parse_properties(text)
    except ValueError as e:
        raise MetaPropertiesError(f"{path}: {e}") from None
    return MetaProperties.from_properties(props, str(path))


def write_meta_properties(log_dir: Path, meta: MetaProperties, *, fsync: bool = True) -> None:
    data = dump_properties(meta.to_properties()).encode("utf-8")
    atomic_write(log_dir / META_PROPERTIES, data, fsync=fsync)

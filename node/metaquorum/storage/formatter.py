"""`metaquorum storage format`: what Kafka 4.3.1's StorageTool/Formatter writes (reference §4.2,
§6.5, §10; KIP-853 bootstrap of a dynamic quorum).

Role: from a server.properties-style config, write `meta.properties` (version 1, cluster.id,
node.id, directory.id) into every log dir, and into the metadata log dir
`__cluster_metadata-0/00000000000000000000-0000000000.checkpoint` holding SnapshotHeader,
KRaftVersion(1) and a VotersRecord of the initial voters (`--standalone` or
`--initial-controllers`), then SnapshotFooter.

Decisions: `bootstrap.checkpoint` (the controller's feature levels, e.g. metadata.version) is
not written: a metaquorum quorum runs no Kafka QuorumController and reads no feature levels,
and Kafka's own controller falls back to the latest production metadata.version when the file
is missing, which is the same as Kafka's default format.

Invariants: an already formatted directory is never overwritten (one-line refusal naming
`--ignore-formatted`); meta.properties is written atomically; the bootstrap checkpoint is
frozen through a `.checkpoint.part` temp file.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from metaquorum.protocol.messages import VotersRecord
from metaquorum.protocol.types import (
    METADATA_RAFT_TOPIC,
    RAFT_TOPIC_KEY,
    RaftTopic,
    Uuid,
    raft_topic_named,
)
from metaquorum.storage.meta_properties import (
    MetaProperties,
    parse_properties,
    read_meta_properties,
    write_meta_properties,
)
from metaquorum.storage.snapshot_records import SnapshotWriter
from metaquorum.storage.snapshots import BOOTSTRAP_SNAPSHOT_ID


class FormatterError(ValueError):
    """Bad format input; the message is one line naming the fix."""


@dataclass(frozen=True, slots=True)
class DynamicVoter:
    """`id@host:port:directoryId` (Kafka's DynamicVoter)."""

    node_id: int
    host: str
    port: int
    directory_id: Uuid

    @classmethod
    def parse(cls, text: str) -> DynamicVoter:
        m = re.fullmatch(r"(\d+)@(\[[^\]]+\]|[^:\[\]]+):(\d+):(\S+)", text.strip())
        if not m:
            raise FormatterError(
                f"bad controller {text!r}: expected id@host:port:directoryId, "
                "e.g. 1@localhost:9093:J8aAPcfLQt2bqs1JT_rMgQ"
            )
        host = m.group(2)[1:-1] if m.group(2).startswith("[") else m.group(2)
        port = int(m.group(3))
        if not 0 < port < 65536:
            raise FormatterError(f"bad port {port} in {text!r}: use 1-65535")
        try:
            dir_id = Uuid.from_string(m.group(4))
        except ValueError:
            raise FormatterError(
                f"bad directory id {m.group(4)!r} in {text!r}: use `metaquorum storage random-uuid`"
            ) from None
        return cls(int(m.group(1)), host, port, dir_id)


def parse_initial_controllers(text: str) -> list[DynamicVoter]:
    voters = [DynamicVoter.parse(part) for part in text.split(",") if part.strip()]
    if not voters:
        raise FormatterError("--initial-controllers is empty: give id@host:port:directoryId,...")
    ids = [v.node_id for v in voters]
    if len(set(ids)) != len(ids):
        raise FormatterError(f"--initial-controllers names a node id twice: {ids}")
    return voters


@dataclass(frozen=True, slots=True)
class ServerConfig:
    node_id: int
    process_roles: tuple[str, ...]
    controller_listener_names: tuple[str, ...]
    listeners: dict[str, tuple[str, int]]  # listener name -> (host, port)
    advertised: dict[str, tuple[str, int]]
    log_dirs: tuple[Path, ...]
    metadata_log_dir: Path
    static_voters: str
    raft_topic: RaftTopic = METADATA_RAFT_TOPIC

    @classmethod
    def load(cls, path: Path, overrides: Mapping[str, str] | None = None) -> ServerConfig:
        """Read `path`; `overrides` (e.g. the node's METAQUORUM_<KEY> environment) win."""
        try:
            props = parse_properties(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise FormatterError(f"cannot read config {path}: {e.strerror}") from None
        props.update(overrides or {})
        raw_id = props.get("node.id")
        if raw_id is None or not raw_id.strip().lstrip("-").isdigit():
            raise FormatterError(f"{path}: set node.id to an integer")
        dirs = tuple(
            Path(d.strip())
            for d in props.get("log.dirs", props.get("log.dir", "")).split(",")
            if d.strip()
        )
        meta = props.get("metadata.log.dir", "").strip()
        if not meta and not dirs:
            raise FormatterError(f"{path}: set metadata.log.dir (or log.dirs)")
        try:
            topic = raft_topic_named(props.get(RAFT_TOPIC_KEY, METADATA_RAFT_TOPIC.name))
        except ValueError as e:
            raise FormatterError(f"{path}: {e}") from None
        return cls(
            node_id=int(raw_id),
            process_roles=_csv(props.get("process.roles", "")),
            controller_listener_names=_csv(props.get("controller.listener.names", "")),
            listeners=_listeners(props.get("listeners", "")),
            advertised=_listeners(props.get("advertised.listeners", "")),
            log_dirs=dirs,
            metadata_log_dir=Path(meta) if meta else dirs[0],
            static_voters=props.get("controller.quorum.voters", "").strip(),
            raft_topic=topic,
        )

    @property
    def all_dirs(self) -> list[Path]:
        out = list(self.log_dirs)
        if self.metadata_log_dir not in out:
            out.append(self.metadata_log_dir)
        return out

    def standalone_voter(self, directory_id: Uuid) -> DynamicVoter:
        """nodeId@<first controller listener's advertised or bound host, or localhost>:port."""
        if "controller" not in self.process_roles:
            raise FormatterError("--standalone needs process.roles to include controller")
        if not self.controller_listener_names:
            raise FormatterError("--standalone needs controller.listener.names in the config")
        name = self.controller_listener_names[0]
        endpoint = self.advertised.get(name) or self.listeners.get(name)
        if endpoint is None:
            raise FormatterError(f"--standalone: listener {name} is not in listeners")
        host, port = endpoint
        return DynamicVoter(self.node_id, host or "localhost", port, directory_id)


def _csv(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _listeners(text: str) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for item in _csv(text):
        m = re.fullmatch(r"([A-Za-z0-9_\-]+)://(\[[^\]]*\]|[^:]*):(\d+)", item)
        if m:
            host = m.group(2)[1:-1] if m.group(2).startswith("[") else m.group(2)
            out[m.group(1)] = (host, int(m.group(3)))
    return out


def voters_record(voters: list[DynamicVoter], listener_name: str) -> VotersRecord:
    return VotersRecord(
        version=0,
        voters=[
            VotersRecord.Voter(
                voter_id=v.node_id,
                voter_directory_id=v.directory_id,
                endpoints=[VotersRecord.Endpoint(name=listener_name, host=v.host, port=v.port)],
                kraft_version_feature=VotersRecord.KRaftVersionFeature(
                    min_supported_version=0, max_supported_version=1
                ),
            )
            for v in sorted(voters, key=lambda v: v.node_id)
        ],
    )


@dataclass(frozen=True, slots=True)
class FormatResult:
    formatted: list[Path]
    skipped: list[Path]
    checkpoint: Path | None
    directory_ids: dict[Path, Uuid]


def format_storage(
    config: ServerConfig,
    cluster_id: str,
    *,
    standalone: bool = False,
    initial_controllers: list[DynamicVoter] | None = None,
    no_initial_controllers: bool = False,
    ignore_formatted: bool = False,
    now_ms: int | None = None,
) -> FormatResult:
    try:
        Uuid.from_string(cluster_id)
    except ValueError as e:
        raise FormatterError(
            f"cluster id {cluster_id!r} is not a valid Uuid ({e}): "
            "make one with `metaquorum storage random-uuid`"
        ) from None
    modes = sum([standalone, initial_controllers is not None, no_initial_controllers])
    if modes > 1:
        raise FormatterError(
            "give only one of --standalone, --initial-controllers, --no-initial-controllers"
        )
    if config.static_voters and (standalone or initial_controllers is not None):
        raise FormatterError(
            "controller.quorum.voters is set: drop it to bootstrap a dynamic quorum, "
            "or drop --standalone/--initial-controllers"
        )
    if "controller" in config.process_roles and not config.static_voters and modes == 0:
        raise FormatterError(
            "a controller needs one of --standalone, --initial-controllers or "
            "--no-initial-controllers (or controller.quorum.voters in the config)"
        )
    voters: list[DynamicVoter] | None = None
    if standalone:
        voters = [config.standalone_voter(Uuid.random())]
    elif initial_controllers is not None:
        voters = initial_controllers
    if voters is not None and not config.controller_listener_names:
        raise FormatterError("set controller.listener.names: the voters record names a listener")

    formatted: list[Path] = []
    skipped: list[Path] = []
    for d in config.all_dirs:
        if read_meta_properties(d) is not None:
            if not ignore_formatted:
                raise FormatterError(
                    f"log directory {d} is already formatted: use --ignore-formatted to "
                    "skip it and format the others"
                )
            skipped.append(d)
        else:
            formatted.append(d)
    my_voter = next((v for v in voters or [] if v.node_id == config.node_id), None)
    dir_ids: dict[Path, Uuid] = {}
    checkpoint: Path | None = None
    for d in formatted:
        d.mkdir(parents=True, exist_ok=True)
        is_meta = d == config.metadata_log_dir
        dir_id = my_voter.directory_id if is_meta and my_voter is not None else Uuid.random()
        dir_ids[d] = dir_id
        if is_meta and voters is not None:
            partition = d / config.raft_topic.partition_dir
            partition.mkdir(exist_ok=True)
            stamp = int(time.time() * 1000) if now_ms is None else now_ms
            writer = SnapshotWriter(
                partition,
                BOOTSTRAP_SNAPSHOT_ID,
                last_contained_log_timestamp=stamp,
                timestamp_ms=stamp,
                kraft_version=1,
                voters=voters_record(voters, config.controller_listener_names[0]),
            )
            checkpoint = writer.freeze()
        write_meta_properties(d, MetaProperties(1, cluster_id, config.node_id, dir_id))
    return FormatResult(formatted, skipped, checkpoint, dir_ids)

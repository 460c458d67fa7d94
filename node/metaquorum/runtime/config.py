"""Node configuration: a Kafka `.properties` file plus environment overrides (KIP-595 §Configs).

Role: turn `server.properties` into a validated `NodeConfig` with Kafka's names and defaults
(`node.id`, `process.roles`, `controller.listener.names`, `listeners`, `advertised.listeners`,
`controller.quorum.voters`,
`controller.quorum.bootstrap.servers`, `metadata.log.dir`, the `controller.quorum.*` timeouts,
`controller.quorum.append.linger.ms`). An environment variable `METAQUORUM_<KEY>` (the key upper
cased, dots and dashes as underscores, e.g. `METAQUORUM_NODE_ID`) overrides the file.

Invariants: every invalid or missing value raises `ConfigError` with ONE line naming the key and
the fix; a config that loads names this node's own controller listener and either a static
`controller.quorum.voters` or `controller.quorum.bootstrap.servers` (then the voter set comes from
the log dir's bootstrap checkpoint: runtime/membership.py); the controller listener's security
protocol (`listener.security.protocol.map`) is PLAINTEXT (`tls` None) or SSL with settings that
load (net/tls.py), anything else is refused at load. `advertised.listeners` never names the
meta-address 0.0.0.0 (Kafka's `KafkaConfig` check); what the node advertises is decided in
runtime/membership.local_endpoints.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from metaquorum.core.config import QuorumConfig
from metaquorum.net.endpoint import ConfigError, Endpoint, parse_endpoint
from metaquorum.net.tls_settings import TlsSettings, server_tls_settings
from metaquorum.protocol.types import (
    METADATA_RAFT_TOPIC,
    RAFT_TOPIC_KEY,
    RaftTopic,
    raft_topic_named,
)
from metaquorum.storage.meta_properties import parse_properties

ENV_PREFIX = "METAQUORUM_"
# Our own (non-Kafka) keys: the HTTP listener of /metrics, /healthz, /readyz, /status.
HTTP_LISTENER = "metaquorum.http.listener"
# POST /snapshot on that listener (mutating, unauthenticated): off unless set to true.
HTTP_SNAPSHOT_ENABLE = "metaquorum.http.snapshot.enable"
# POST /resign?epoch=N on that listener (a leader of epoch N resigns): off unless set to true.
HTTP_RESIGN_ENABLE = "metaquorum.http.resign.enable"
# HTTPS on that listener with the controller listener's certificate (no client certificate).
HTTP_SSL_ENABLE = "metaquorum.http.ssl.enable"
MAX_FRAME_BYTES = "socket.request.max.bytes"  # Kafka's name, default 100 MiB
SNAPSHOT_BYTES = "metadata.log.max.record.bytes.between.snapshots"  # Kafka's, default 20 MiB
DEFAULT_SNAPSHOT_BYTES = 20 * 1024 * 1024
# Kafka's segment size of the metadata log, default 1 GiB, at least `metadata.log.segment.min.bytes`
# (Kafka's internal key, default 8 MiB; its own tests lower it, as our soak's CI check does).
SEGMENT_BYTES = "metadata.log.segment.bytes"
SEGMENT_MIN_BYTES = "metadata.log.segment.min.bytes"
DEFAULT_SEGMENT_BYTES = 1 << 30
DEFAULT_SEGMENT_MIN_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class NodeConfig:
    node_id: int
    process_roles: tuple[str, ...]
    controller_listener_names: tuple[str, ...]
    listeners: dict[str, Endpoint]
    advertised_listeners: dict[str, Endpoint]  # advertised.listeners (may be empty)
    voters: dict[int, Endpoint]  # controller.quorum.voters (static quorum)
    bootstrap_servers: tuple[Endpoint, ...]
    metadata_log_dir: Path
    quorum: QuorumConfig
    http_listener: Endpoint | None
    max_frame_bytes: int
    snapshot_bytes: int
    props: dict[str, str]
    segment_bytes: int = DEFAULT_SEGMENT_BYTES  # metadata.log.segment.bytes
    tls: TlsSettings | None = None  # the controller listener's, when its protocol is SSL
    http_snapshot_enabled: bool = False  # POST /snapshot served
    http_resign_enabled: bool = False  # POST /resign served
    http_tls: TlsSettings | None = None  # HTTPS on the HTTP listener
    raft_topic: RaftTopic = METADATA_RAFT_TOPIC  # metaquorum.raft.topic (TestRaftServer interop)

    @property
    def listener_name(self) -> str:
        return self.controller_listener_names[0]

    @property
    def listen(self) -> Endpoint:
        return self.listeners[self.listener_name]

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters


def _int(props: Mapping[str, str], key: str, default: int | None = None, minimum: int = 0) -> int:
    raw = props.get(key)
    if raw is None or not raw.strip():
        if default is None:
            raise ConfigError(f"{key} is missing: set {key}=<integer> in the config")
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{key}={raw!r} is not an integer: set {key}=<integer>") from None
    if value < minimum:
        raise ConfigError(f"{key}={value} is below {minimum}: set {key} to at least {minimum}")
    return value


def _csv(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def parse_listeners(text: str, key: str = "listeners") -> dict[str, Endpoint]:
    out: dict[str, Endpoint] = {}
    for item in _csv(text):
        name, sep, rest = item.partition("://")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_\-]+", name):
            raise ConfigError(f"{key}: {item!r} is not NAME://host:port")
        out[name] = parse_endpoint(rest, key)
    return out


def parse_voters(text: str) -> dict[int, Endpoint]:
    key = "controller.quorum.voters"
    out: dict[int, Endpoint] = {}
    for item in _csv(text):
        node, sep, rest = item.partition("@")
        if not sep or not node.strip().isdigit():
            raise ConfigError(f"{key}: {item!r} is not id@host:port")
        out[int(node)] = parse_endpoint(rest, key)
    return out


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    """`METAQUORUM_NODE_ID=3` -> `node.id=3` (`__` keeps a literal dash: `A__B` -> `a-b`)."""
    out: dict[str, str] = {}
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX) and len(name) > len(ENV_PREFIX):
            key = name[len(ENV_PREFIX) :].lower().replace("__", "-").replace("_", ".")
            out[key] = value
    return out


def load_config(path: Path | None, environ: Mapping[str, str] | None = None) -> NodeConfig:
    props: dict[str, str] = {}
    if path is not None:
        try:
            props = parse_properties(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read config {path}: {e.strerror}; pass --config F") from None
    props.update(env_overrides(os.environ if environ is None else environ))
    return config_from_properties(props)


def config_from_properties(props: dict[str, str]) -> NodeConfig:
    node_id = _int(props, "node.id")
    roles = _csv(props.get("process.roles", ""))
    if not roles:
        raise ConfigError("process.roles is missing: set process.roles=controller")
    if roles != ("controller",):
        raise ConfigError(f"process.roles={','.join(roles)}: metaquorum runs controller only")
    names = _csv(props.get("controller.listener.names", ""))
    if not names:
        raise ConfigError("controller.listener.names is missing: set it, e.g. CONTROLLER")
    listeners = parse_listeners(props.get("listeners", ""))
    if names[0] not in listeners:
        raise ConfigError(
            f"listeners has no {names[0]} listener: add {names[0]}://host:port to listeners"
        )
    advertised = parse_listeners(props.get("advertised.listeners", ""), "advertised.listeners")
    if any(ep.host == "0.0.0.0" for ep in advertised.values()):
        raise ConfigError(
            "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0: "
            "advertise a routable IP address or host name"
        )
    voters = parse_voters(props.get("controller.quorum.voters", ""))
    bootstrap = tuple(
        parse_endpoint(s, "controller.quorum.bootstrap.servers")
        for s in _csv(props.get("controller.quorum.bootstrap.servers", ""))
    )
    if not voters and not bootstrap:
        raise ConfigError(
            "controller.quorum.voters and controller.quorum.bootstrap.servers are both missing: "
            "set controller.quorum.voters=id@host:port,... (static quorum) or "
            "controller.quorum.bootstrap.servers=host:port,... (a quorum formatted with "
            "--standalone or --initial-controllers)"
        )
    log_dir = (
        props.get("metadata.log.dir", "").strip()
        or (_csv(props.get("log.dirs", props.get("log.dir", ""))) or ("",))[0]
    )
    if not log_dir:
        raise ConfigError("metadata.log.dir is missing: set metadata.log.dir=<directory>")
    try:
        quorum = QuorumConfig.from_properties(props)
    except ValueError as e:
        raise ConfigError(f"{e}: fix it in the config") from None
    http_raw = props.get(HTTP_LISTENER, "").strip()
    tls = server_tls_settings(props, names[0])
    try:
        raft_topic = raft_topic_named(props.get(RAFT_TOPIC_KEY, METADATA_RAFT_TOPIC.name))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return NodeConfig(
        node_id=node_id,
        process_roles=roles,
        controller_listener_names=names,
        listeners=listeners,
        advertised_listeners=advertised,
        voters=voters,
        bootstrap_servers=bootstrap,
        metadata_log_dir=Path(log_dir),
        quorum=quorum,
        http_listener=parse_endpoint(http_raw, HTTP_LISTENER) if http_raw else None,
        max_frame_bytes=_int(props, MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES, minimum=1024),
        snapshot_bytes=_int(props, SNAPSHOT_BYTES, DEFAULT_SNAPSHOT_BYTES, minimum=1),
        props=props,
        segment_bytes=_int(
            props,
            SEGMENT_BYTES,
            DEFAULT_SEGMENT_BYTES,
            minimum=_int(props, SEGMENT_MIN_BYTES, DEFAULT_SEGMENT_MIN_BYTES, minimum=1),
        ),
        tls=tls,
        http_snapshot_enabled=_flag(props, HTTP_SNAPSHOT_ENABLE),
        http_resign_enabled=_flag(props, HTTP_RESIGN_ENABLE),
        http_tls=_http_tls(props, tls),
        raft_topic=raft_topic,
    )


def _http_tls(props: Mapping[str, str], tls: TlsSettings | None) -> TlsSettings | None:
    if not _flag(props, HTTP_SSL_ENABLE):
        return None
    if tls is None:
        raise ConfigError(
            f"{HTTP_SSL_ENABLE}=true uses the controller listener's certificate, but that "
            "listener is PLAINTEXT: put it on SSL (listener.security.protocol.map, ssl.*)"
        )
    # Probes and scrapers present no client certificate: HTTPS without client auth.
    return dataclasses.replace(tls, client_auth="none")


def _flag(props: Mapping[str, str], key: str) -> bool:
    raw = props.get(key, "false").strip().lower() or "false"
    if raw not in ("true", "false"):
        raise ConfigError(f"{key}={raw!r}: set {key}=true or false")
    return raw == "true"

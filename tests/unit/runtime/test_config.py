"""Node configuration: Kafka names and defaults, env overrides, one-line errors naming key+fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from metaquorum.net.endpoint import ConfigError, Endpoint
from metaquorum.runtime.config import config_from_properties, load_config

BASE = {
    "node.id": "2",
    "process.roles": "controller",
    "controller.listener.names": "CONTROLLER",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.quorum.voters": "1@h1:9093,2@127.0.0.1:9093,3@[::1]:9095",
    "metadata.log.dir": "/data/meta",
}


def test_valid_config_with_kafka_defaults() -> None:
    c = config_from_properties(dict(BASE))
    assert c.node_id == 2 and c.is_voter
    assert c.listen == Endpoint("127.0.0.1", 9093)
    assert c.voters[3] == Endpoint("::1", 9095) and str(c.voters[3]) == "[::1]:9095"
    assert c.metadata_log_dir == Path("/data/meta")
    # Kafka 4.3 QuorumConfig defaults (reference §5.2)
    q = c.quorum
    assert (q.election_timeout_ms, q.fetch_timeout_ms, q.append_linger_ms) == (1000, 2000, 25)
    assert (q.request_timeout_ms, q.retry_backoff_ms, q.election_backoff_max_ms) == (2000, 20, 1000)
    assert c.max_frame_bytes == 100 * 1024 * 1024


def test_log_dirs_fallback_for_metadata_log_dir() -> None:
    props = {k: v for k, v in BASE.items() if k != "metadata.log.dir"}
    props["log.dirs"] = "/a,/b"
    assert config_from_properties(props).metadata_log_dir == Path("/a")


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("node.id", None, "node.id"),
        ("node.id", "two", "node.id"),
        ("process.roles", None, "process.roles"),
        ("process.roles", "broker,controller", "process.roles"),
        ("controller.listener.names", None, "controller.listener.names"),
        ("listeners", "PLAINTEXT://:9092", "CONTROLLER"),
        ("listeners", "CONTROLLER//x:1", "listeners"),
        ("controller.quorum.voters", None, "controller.quorum.voters"),
        ("controller.quorum.voters", "1@h1", "controller.quorum.voters"),
        ("controller.quorum.voters", "x@h:1", "controller.quorum.voters"),
        ("metadata.log.dir", None, "metadata.log.dir"),
        ("controller.quorum.fetch.timeout.ms", "soon", "controller.quorum.fetch.timeout.ms"),
        ("controller.quorum.election.timeout.ms", "-1", "controller.quorum.election.timeout.ms"),
        ("socket.request.max.bytes", "10", "socket.request.max.bytes"),
        ("metadata.log.segment.bytes", "1048576", "at least 8388608"),
    ],
)
def test_each_bad_value_is_one_line_naming_the_key(
    key: str, value: str | None, needle: str
) -> None:
    props = dict(BASE)
    if value is None:
        props.pop(key, None)
    else:
        props[key] = value
    with pytest.raises(ConfigError) as e:
        config_from_properties(props)
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text("".join(f"{k}={v}\n" for k, v in BASE.items()))
    env = {"METAQUORUM_NODE_ID": "3", "METAQUORUM_CONTROLLER_QUORUM_FETCH_TIMEOUT_MS": "4000"}
    c = load_config(f, env)
    assert c.node_id == 3 and c.quorum.fetch_timeout_ms == 4000
    assert load_config(f, {}).node_id == 2


def test_unreadable_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--config"):
        load_config(tmp_path / "missing.properties", {})


def test_segment_bytes_is_kafkas_with_its_internal_minimum() -> None:
    assert config_from_properties(dict(BASE)).segment_bytes == 1 << 30
    c = config_from_properties({**BASE, "metadata.log.segment.bytes": str(8 << 20)})
    assert c.segment_bytes == 8 << 20
    lowered = {
        **BASE,
        "metadata.log.segment.min.bytes": "65536",
        "metadata.log.segment.bytes": "65536",
    }
    assert config_from_properties(lowered).segment_bytes == 65536

"""Our version tables against the pinned Kafka release (KAFKA_VERSION), read from its jars.

A new Kafka version that adds a message version, moves a flexible-version start, renumbers an
api key or adds an error code shows up here as a failing test, naming what changed.
"""

from __future__ import annotations

import pytest
from metaquorum.protocol.api_keys import (
    API_VERSIONS,
    ApiKeys,
    request_header_version,
    response_header_version,
)
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import MESSAGES
from metaquorum.protocol.schema import BY_NAME

from tests.conformance.oracle_client import Json, KafkaOracle

pytestmark = pytest.mark.conformance


def kafka_name(api: ApiKeys) -> str:
    """ApiKeys.BEGIN_QUORUM_EPOCH -> "BeginQuorumEpoch" (Kafka's message name prefix)."""
    return "".join(part.capitalize() for part in api.name.split("_"))


def first_flexible(info: Json) -> int | None:
    """Kafka's first flexible version; flexible versions always run up to the highest."""
    flexible: list[int] = info["flexible"]
    if not flexible:
        return None
    assert flexible == list(range(flexible[0], info["highest"] + 1)), info
    return flexible[0]


def test_api_keys_match_kafka(kafka_oracle: KafkaOracle) -> None:
    kafka = {a["enum"]: a for a in kafka_oracle.call("api_keys")["apis"]}
    for api in ApiKeys:
        assert api.name in kafka, f"Kafka has no ApiKeys.{api.name}"
        assert kafka[api.name]["id"] == api.value, api
        assert kafka[api.name]["name"] == kafka_name(api), api


@pytest.mark.parametrize("api", list(ApiKeys), ids=lambda a: a.name)
@pytest.mark.parametrize("side", ["Request", "Response"])
def test_api_version_ranges_match_kafka(kafka_oracle: KafkaOracle, api: ApiKeys, side: str) -> None:
    info = kafka_oracle.versions(kafka_name(api) + side)
    ours = API_VERSIONS[api]
    kafka_range = (info["lowest"], info["highest"], first_flexible(info))
    assert (ours.lowest, ours.highest, ours.first_flexible) == kafka_range
    assert info["api"]["apiKey"] == api.value
    assert info["api"]["latestVersionUnstable"] is False
    assert info["api"]["oldestVersion"] == ours.lowest
    assert info["api"]["latestVersion"] == ours.highest
    header = request_header_version if side == "Request" else response_header_version
    versions = range(ours.lowest, ours.highest + 1)
    assert [header(api.value, v) for v in versions] == info["api"]["headerVersions"]


def test_error_codes_match_kafka(kafka_oracle: KafkaOracle) -> None:
    kafka = {e["name"]: e["code"] for e in kafka_oracle.call("errors")["errors"]}
    ours = {e.name: int(e.value) for e in Errors}
    missing = sorted(set(kafka) - set(ours))
    extra = sorted(set(ours) - set(kafka))
    assert not missing, f"Kafka has error codes we lack: {missing}"
    assert not extra, f"we have error codes Kafka lacks: {extra}"
    assert ours == kafka


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_message_version_ranges_match_kafka(kafka_oracle: KafkaOracle, name: str) -> None:
    """Every generated class: Kafka's lowest/highest supported version and flexible versions."""
    info = kafka_oracle.versions(name)
    cls = MESSAGES[name]
    spec = BY_NAME[name]
    assert (
        info["lowest"],
        info["highest"],
    ) == (cls.LOWEST_SUPPORTED_VERSION, cls.HIGHEST_SUPPORTED_VERSION)
    ours_flexible = [v for v in spec.versions() if spec.is_flexible(v)]
    assert ours_flexible == info["flexible"]
    if "api" in info:
        assert info["api"]["apiKey"] == cls.API_KEY


def test_every_kafka_message_we_need_is_ours() -> None:
    """Both sides of every API we speak, plus the headers, control records and quorum-state."""
    needed = {kafka_name(api) + side for api in ApiKeys for side in ("Request", "Response")}
    needed |= {
        "RequestHeader",
        "ResponseHeader",
        "LeaderChangeMessage",
        "SnapshotHeaderRecord",
        "SnapshotFooterRecord",
        "KRaftVersionRecord",
        "VotersRecord",
        "QuorumStateData",
    }
    assert sorted(needed - set(MESSAGES)) == []

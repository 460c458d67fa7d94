"""Kafka's error codes and api keys; header-version rule with the ApiVersions exception."""

from __future__ import annotations

import pytest
from metaquorum.protocol.api_keys import (
    ApiKeys,
    request_header_version,
    response_header_version,
)
from metaquorum.protocol.errors import Errors, ProtocolError


def test_error_codes_contiguous_and_known() -> None:
    codes = sorted(e.value for e in Errors)
    assert codes == list(range(-1, codes[-1] + 1))
    assert codes[-1] >= 133
    # Numbers from the reference's table (Kafka Errors.java), an oracle independent of our file.
    assert Errors.NOT_LEADER_OR_FOLLOWER == 6
    assert Errors.FENCED_LEADER_EPOCH == 74
    assert Errors.INCONSISTENT_VOTER_SET == 94
    assert Errors.INCONSISTENT_CLUSTER_ID == 104
    assert Errors.VOTER_NOT_FOUND == 127
    assert Errors.for_code(9999) is Errors.UNKNOWN_SERVER_ERROR
    assert issubclass(ProtocolError, ValueError)


def test_api_keys_numbers() -> None:
    assert [k.value for k in ApiKeys] == [0, 1, 18, 52, 53, 54, 55, 57, 59, 60, 80, 81, 82]


@pytest.mark.parametrize(
    ("key", "version", "req", "resp"),
    [
        (ApiKeys.PRODUCE, 3, 1, 0),
        (ApiKeys.PRODUCE, 8, 1, 0),
        (ApiKeys.PRODUCE, 9, 2, 1),
        (ApiKeys.PRODUCE, 13, 2, 1),
        (ApiKeys.FETCH, 11, 1, 0),
        (ApiKeys.FETCH, 12, 2, 1),
        (ApiKeys.API_VERSIONS, 2, 1, 0),
        (ApiKeys.API_VERSIONS, 3, 2, 0),
        (ApiKeys.API_VERSIONS, 4, 2, 0),
        (ApiKeys.VOTE, 0, 2, 1),
        (ApiKeys.BEGIN_QUORUM_EPOCH, 0, 1, 0),
        (ApiKeys.BEGIN_QUORUM_EPOCH, 1, 2, 1),
        (ApiKeys.END_QUORUM_EPOCH, 0, 1, 0),
        (ApiKeys.DESCRIBE_CLUSTER, 0, 2, 1),
    ],
)
def test_header_versions(key: ApiKeys, version: int, req: int, resp: int) -> None:
    assert request_header_version(key, version) == req
    assert response_header_version(key, version) == resp


@pytest.mark.parametrize(
    ("key", "version"), [(0, 0), (0, 2), (0, 14), (1, 3), (1, 19), (52, 3), (999, 0)]
)
def test_header_version_unknown(key: int, version: int) -> None:
    with pytest.raises(ProtocolError):
        request_header_version(key, version)


def test_api_versions_table_matches_schemas() -> None:
    from metaquorum.protocol.api_keys import API_VERSIONS
    from metaquorum.protocol.schema import ALL

    for msg in ALL:
        if msg.kind not in ("request", "response"):
            continue
        rng = API_VERSIONS[ApiKeys(msg.api_key)]
        assert (rng.lowest, rng.highest) == (msg.lowest, msg.highest), msg.name
        assert rng.first_flexible == msg.flexible_range().lowest, msg.name


def test_api_key_lookup_by_code_agrees_with_the_enum_and_refuses_unknown_codes() -> None:
    """`api_key_of` / `version_range` use a dict by wire code (the hot path): same answers as
    `ApiKeys(code)` and `API_VERSIONS`, and a ProtocolError for any code we do not speak."""
    from metaquorum.protocol.api_keys import API_VERSIONS, ApiKeys, api_key_of, version_range
    from metaquorum.protocol.errors import ProtocolError

    for code in range(-1, 100):
        try:
            expected = ApiKeys(code)
        except ValueError:
            for fn in (api_key_of, version_range):
                try:
                    fn(code)
                except ProtocolError as exc:
                    assert str(code) in str(exc)
                else:
                    raise AssertionError(f"{fn.__name__}({code}) did not refuse")
            continue
        assert api_key_of(code) is expected
        assert version_range(code) is API_VERSIONS[expected]

"""Kafka API keys used by KRaft, their version ranges, and which header version each uses.

Role: `ApiKeys` names the RPCs a KRaft quorum speaks (numbers as Kafka has them), `API_VERSIONS`
records the version range and first flexible version Kafka 4.3.1 declares for each (checked
against our schemas and Kafka's jar by tests), and the two header helpers apply Kafka's rule:

- a request in a flexible version uses request header v2, otherwise v1;
- a response in a flexible version uses response header v1, otherwise v0;
- except ApiVersions responses, which always use response header v0 (KIP-511), so that a client
  can parse the answer whatever version it asked for.

Invariant: an api key or version outside these tables raises `ProtocolError`.
KIP-482 (flexible versions, header versions), KIP-511, KIP-595 (the raft RPCs); Produce is the
client append path on `__cluster_metadata`-0.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from metaquorum.protocol.errors import ProtocolError


class ApiKeys(IntEnum):
    PRODUCE = 0
    FETCH = 1
    API_VERSIONS = 18
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    UPDATE_FEATURES = 57
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82


@dataclass(frozen=True, slots=True)
class ApiVersionRange:
    lowest: int
    highest: int
    first_flexible: int  # lowest flexible version

    def is_flexible(self, version: int) -> bool:
        return version >= self.first_flexible

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest


# Kafka 4.3.1's validVersions / flexibleVersions for each API (request and response agree).
API_VERSIONS: dict[ApiKeys, ApiVersionRange] = {
    ApiKeys.PRODUCE: ApiVersionRange(3, 13, 9),
    ApiKeys.FETCH: ApiVersionRange(4, 18, 12),
    ApiKeys.API_VERSIONS: ApiVersionRange(0, 4, 3),
    ApiKeys.VOTE: ApiVersionRange(0, 2, 0),
    ApiKeys.BEGIN_QUORUM_EPOCH: ApiVersionRange(0, 1, 1),
    ApiKeys.END_QUORUM_EPOCH: ApiVersionRange(0, 1, 1),
    ApiKeys.DESCRIBE_QUORUM: ApiVersionRange(0, 2, 0),
    ApiKeys.UPDATE_FEATURES: ApiVersionRange(0, 2, 0),
    ApiKeys.FETCH_SNAPSHOT: ApiVersionRange(0, 1, 0),
    ApiKeys.DESCRIBE_CLUSTER: ApiVersionRange(0, 2, 0),
    ApiKeys.ADD_RAFT_VOTER: ApiVersionRange(0, 1, 0),
    ApiKeys.REMOVE_RAFT_VOTER: ApiVersionRange(0, 0, 0),
    ApiKeys.UPDATE_RAFT_VOTER: ApiVersionRange(0, 0, 0),
}


# Looked up on every request and response: a dict, not `ApiKeys(code)` (an enum call is ~15x
# slower, and showed as ~5% of a leader's time at one client; docs/performance.md round 3).
_KEY_BY_CODE: dict[int, ApiKeys] = {int(k): k for k in ApiKeys}
_RANGE_BY_CODE: dict[int, ApiVersionRange] = {int(k): r for k, r in API_VERSIONS.items()}


def api_key_of(code: int) -> ApiKeys:
    """The ApiKeys member for a wire api key; ProtocolError if we do not speak it."""
    key = _KEY_BY_CODE.get(code)
    if key is None:
        raise ProtocolError(f"unknown or unsupported api key {code}")
    return key


def version_range(api_key: int) -> ApiVersionRange:
    rng = _RANGE_BY_CODE.get(api_key)
    if rng is None:
        raise ProtocolError(f"unknown or unsupported api key {api_key}")
    return rng


def check_version(api_key: int, api_version: int) -> ApiVersionRange:
    rng = version_range(api_key)
    if api_version not in rng:
        raise ProtocolError(
            f"unsupported version {api_version} of {api_key_of(api_key).name} "
            f"(Kafka 4.3.1 supports {rng.lowest}-{rng.highest})"
        )
    return rng


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for a flexible request version, else 1 (request header v0 is gone in Kafka 4)."""
    return 2 if check_version(api_key, api_version).is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for a flexible response version, else 0; ApiVersions responses always use 0."""
    rng = check_version(api_key, api_version)
    if api_key == ApiKeys.API_VERSIONS:
        return 0
    return 1 if rng.is_flexible(api_version) else 0

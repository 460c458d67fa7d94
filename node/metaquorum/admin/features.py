"""Feature flags of a running quorum (KIP-584), as Kafka's admin client does for
`kafka-features.sh --bootstrap-controller H:P describe / upgrade / downgrade`.

Role: `describe_features` sends ApiVersions to the active controller and returns its supported
and finalized features (KafkaAdminClient.describeFeatures); `update_features` sends
UpdateFeatures to the active controller found through DescribeCluster, retries while leadership
moves (NOT_CONTROLLER, a lost connection), and returns one outcome per feature, which
`format_update` prints with FeatureCommand's lines ("kraft.version was upgraded to 1.", "Could
not upgrade kraft.version to 1. <Kafka's message>"). Used for KIP-853's kraft.version 0 -> 1
upgrade of a static quorum.
Invariants: an update is sent to the leader only; an answer other than NONE is never reported
as a success; a top-level error fails every feature of the request (as Kafka's client).
"""

from __future__ import annotations

from dataclasses import dataclass

from metaquorum.admin.client import AdminClient, RetriableAdminError
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    ApiVersionsRequestData,
    ApiVersionsResponseData,
    UpdateFeaturesRequestData,
    UpdateFeaturesResponseData,
)

UPDATE_FEATURES_VERSION = 2
API_VERSIONS_VERSION = 4
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


@dataclass(frozen=True, slots=True)
class FeatureInfo:
    name: str
    min_supported: int
    max_supported: int
    finalized: int  # 0 when not finalized
    epoch: int | None  # FinalizedFeaturesEpoch, None when absent


async def describe_features(client: AdminClient) -> list[FeatureInfo]:
    async def once() -> ApiVersionsResponseData:
        cluster = await client._describe_cluster_once()
        leader = cluster.controllers.get(cluster.controller_id)
        if leader is None:
            raise RetriableAdminError("no active controller (the quorum has no leader yet)")
        request = ApiVersionsRequestData(
            client_software_name="metaquorum", client_software_version="1"
        )
        answer = await client._request(leader, ApiKeys.API_VERSIONS, API_VERSIONS_VERSION, request)
        assert isinstance(answer, ApiVersionsResponseData)
        return answer

    r: ApiVersionsResponseData = await client._retrying(once)
    finalized = {f.name: f.max_version_level for f in r.finalized_features}
    epoch = r.finalized_features_epoch if r.finalized_features_epoch >= 0 else None
    return [
        FeatureInfo(f.name, f.min_version, f.max_version, finalized.get(f.name, 0), epoch)
        for f in sorted(r.supported_features, key=lambda f: f.name)
    ]


def format_describe(features: list[FeatureInfo]) -> str:
    """FeatureCommand.handleDescribe's lines."""
    return "".join(
        f"Feature: {f.name:<40}  SupportedMinVersion: {f.min_supported!s:<15}  "
        f"SupportedMaxVersion: {f.max_supported!s:<15}  FinalizedVersionLevel: "
        f"{f.finalized!s:<15}  Epoch: {'-' if f.epoch is None else f.epoch}\n"
        for f in features
    )


async def update_features(
    client: AdminClient,
    updates: dict[str, int],
    upgrade_type: int = UPGRADE,
    validate_only: bool = False,
) -> dict[str, str | None]:
    """Each feature -> None (done) or the error line Kafka's client would raise."""
    request = UpdateFeaturesRequestData(
        timeout_ms=int(client.timeout_s * 1000),
        feature_updates=[
            UpdateFeaturesRequestData.FeatureUpdateKey(
                feature=name, max_version_level=level, upgrade_type=upgrade_type
            )
            for name, level in updates.items()
        ],
        validate_only=validate_only,
    )

    async def once() -> UpdateFeaturesResponseData:
        cluster = await client._describe_cluster_once()
        leader = cluster.controllers.get(cluster.controller_id)
        if leader is None:
            raise RetriableAdminError("no active controller (the quorum has no leader yet)")
        answer = await client._request(
            leader, ApiKeys.UPDATE_FEATURES, UPDATE_FEATURES_VERSION, request
        )
        assert isinstance(answer, UpdateFeaturesResponseData)
        if answer.error_code == Errors.NOT_CONTROLLER:
            raise RetriableAdminError(f"the leader moved: {answer.error_message}")
        return answer

    r: UpdateFeaturesResponseData = await client._retrying(once)
    if r.error_code != 0:
        error = Errors(r.error_code)
        line = r.error_message or _DEFAULT_MESSAGES.get(error, error.name)
        return dict.fromkeys(updates, line)
    outcome: dict[str, str | None] = dict.fromkeys(updates)
    for result in r.results:  # v0-1 only; v2 answers NONE for all
        if result.feature in outcome and result.error_code != 0:
            outcome[result.feature] = result.error_message or Errors(result.error_code).name
    return outcome


# Kafka's `Errors` default messages, shown when a response carries none.
_DEFAULT_MESSAGES = {
    Errors.UNKNOWN_SERVER_ERROR: (
        "The server experienced an unexpected error when processing the request."
    ),
    Errors.REQUEST_TIMED_OUT: "The request timed out.",
}


def format_update(
    op: str, updates: dict[str, int], outcome: dict[str, str | None], dry_run: bool
) -> tuple[str, int]:
    """FeatureCommand.update's lines (features sorted) and the number of failures."""
    lines: list[str] = []
    failures = 0
    for name in sorted(outcome):
        error = outcome[name]
        if error is not None:
            helper = "Can not " if dry_run else "Could not "
            lines.append(f"{helper}{op} {name} to {updates[name]}. {error}")
            failures += 1
        else:
            verb = " can be " if dry_run else " was "
            lines.append(f"{name}{verb}{op}d to {updates[name]}.")
    return "".join(line + "\n" for line in lines), failures

"""Requests the runtime answers itself: ApiVersions and DescribeCluster (reference §1.2, §1.12).

Role: what a KRaft controller's `ControllerApis` answers outside the Raft client.
- ApiVersions: our ApiKeys with Kafka 4.3.1's version ranges; from v4 on the `kraft.version`
  supported feature, which an AddRaftVoter leader reads: 0-1 (KIP-853's dynamic voters);
  from v3 on, once kraft.version is above 0, FinalizedFeatures `kraft.version` at that level
  and FinalizedFeaturesEpoch (a controller's `SimpleApiVersionManager` with
  `setFinalizedLevel(kraft.version, raftClient.kraftVersion())`, which drops a level 0; the
  epoch is the last committed offset, as the offset of Kafka's published metadata image);
  an ApiVersions request of an unsupported version is answered at v0 with UNSUPPORTED_VERSION
  and the ApiKeys list (Kafka's `RequestContext.isUnsupportedApiVersionsRequest`).
- DescribeCluster: a controller answers EndpointType 2 (CONTROLLER) with the voters' endpoints
  and the Raft leader as ControllerId (-1 when unknown); a broker-endpoint request gets
  MISMATCHED_ENDPOINT_TYPE (v1+) or INVALID_REQUEST (v0); an unknown type
  UNSUPPORTED_ENDPOINT_TYPE.
Invariants: pure functions of their inputs (no IO), so unit tests pin them.
"""

from __future__ import annotations

from collections.abc import Mapping

from metaquorum.net.endpoint import Endpoint
from metaquorum.protocol.api_keys import API_VERSIONS
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    ApiVersionsResponseData,
    DescribeClusterRequestData,
    DescribeClusterResponseData,
)

AVR = ApiVersionsResponseData

KRAFT_VERSION_FEATURE = ("kraft.version", 0, 1)  # KIP-853: dynamic voters supported
ENDPOINT_BROKER = 1
ENDPOINT_CONTROLLER = 2


def api_versions_response(
    version: int,
    error: Errors = Errors.NONE,
    *,
    kraft_version: int = 0,
    features_epoch: int = -1,
) -> AVR:
    keys = [
        AVR.ApiVersion(api_key=int(k), min_version=r.lowest, max_version=r.highest)
        for k, r in sorted(API_VERSIONS.items())
    ]
    features: list[AVR.SupportedFeatureKey] = []
    name, lo, hi = KRAFT_VERSION_FEATURE
    # "In v0-v3, features with MinSupportedVersion = 0 are omitted" (ApiVersionsResponse.json).
    if version >= 4 or (version == 3 and lo > 0):
        features.append(AVR.SupportedFeatureKey(name=name, min_version=lo, max_version=hi))
    finalized: list[AVR.FinalizedFeatureKey] = []
    if kraft_version > 0 and error is Errors.NONE:
        finalized.append(
            AVR.FinalizedFeatureKey(
                name=name, max_version_level=kraft_version, min_version_level=kraft_version
            )
        )
    else:
        features_epoch = -1
    return AVR(
        error_code=int(error),
        api_keys=keys,
        supported_features=features,
        finalized_features_epoch=features_epoch,
        finalized_features=finalized,
    )


def describe_cluster_response(
    request: DescribeClusterRequestData,
    version: int,
    *,
    cluster_id: str,
    leader_id: int,
    controllers: Mapping[int, Endpoint],
) -> DescribeClusterResponseData:
    if request.endpoint_type == ENDPOINT_BROKER:
        error = Errors.MISMATCHED_ENDPOINT_TYPE if version >= 1 else Errors.INVALID_REQUEST
        return DescribeClusterResponseData(
            error_code=int(error),
            error_message="The request was sent to an endpoint of type CONTROLLER, "
            "but we wanted an endpoint of type BROKER",
        )
    if request.endpoint_type != ENDPOINT_CONTROLLER:
        return DescribeClusterResponseData(
            error_code=int(Errors.UNSUPPORTED_ENDPOINT_TYPE),
            error_message=f"Unsupported endpoint type {request.endpoint_type}",
        )
    brokers = [
        DescribeClusterResponseData.DescribeClusterBroker(broker_id=nid, host=ep.host, port=ep.port)
        for nid, ep in sorted(controllers.items())
    ]
    return DescribeClusterResponseData(
        error_code=0,
        error_message=None,
        endpoint_type=ENDPOINT_CONTROLLER,
        cluster_id=cluster_id,
        controller_id=leader_id if leader_id in controllers else -1,
        brokers=brokers,
    )

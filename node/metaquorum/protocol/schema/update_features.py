"""UpdateFeatures (api key 57), versions 0-2, flexible 0+ (KIP-584 feature versioning).

Kafka's `kafka-features.sh --bootstrap-controller H:P upgrade --feature kraft.version=1` sends it
to the active controller; a KRaft node answers it for `kraft.version` (KIP-853's upgrade of a
static quorum). v1 adds UpgradeType (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) and
ValidateOnly; v2 drops the per-feature Results from the response. Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

UPDATE_FEATURES_REQUEST = Message(
    "UpdateFeaturesRequest", "request", "0-2", "0+", api_key=57,
    fields=(
        f("timeoutMs", "int32", "0+", default=60000),
        f("FeatureUpdates", "[]FeatureUpdateKey", "0+",
          f("Feature", "string", "0+", map_key=True),
          f("MaxVersionLevel", "int16", "0+"),
          f("AllowDowngrade", "bool", "0"),
          f("UpgradeType", "int8", "1+", default=1)),
        f("ValidateOnly", "bool", "1+"),
    ),
)  # fmt: skip

UPDATE_FEATURES_RESPONSE = Message(
    "UpdateFeaturesResponse", "response", "0-2", "0+", api_key=57,
    fields=(
        f("ThrottleTimeMs", "int32", "0+"),
        f("ErrorCode", "int16", "0+"),
        f("ErrorMessage", "string", "0+", nullable="0+"),
        f("Results", "[]UpdatableFeatureResult", "0-1",
          f("Feature", "string", "0+", map_key=True),
          f("ErrorCode", "int16", "0+"),
          f("ErrorMessage", "string", "0+", nullable="0+"),
          ignorable=True),
    ),
)  # fmt: skip

MESSAGES = (UPDATE_FEATURES_REQUEST, UPDATE_FEATURES_RESPONSE)

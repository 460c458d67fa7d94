"""ApiVersions (api key 18), versions 0-4, flexible 3+ (KIP-35, KIP-511 v3, KIP-584 features).

Its response always travels with response header v0 (see `api_keys.response_header_version`).
Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

API_VERSIONS_REQUEST = Message(
    "ApiVersionsRequest", "request", "0-4", "3+", api_key=18,
    fields=(
        f("ClientSoftwareName", "string", "3+", ignorable=True),
        f("ClientSoftwareVersion", "string", "3+", ignorable=True),
    ),
)  # fmt: skip

API_VERSIONS_RESPONSE = Message(
    "ApiVersionsResponse", "response", "0-4", "3+", api_key=18,
    fields=(
        f("ErrorCode", "int16", "0+"),
        f("ApiKeys", "[]ApiVersion", "0+",
          f("ApiKey", "int16", "0+", map_key=True),
          f("MinVersion", "int16", "0+"),
          f("MaxVersion", "int16", "0+")),
        f("ThrottleTimeMs", "int32", "1+", ignorable=True),
        f("SupportedFeatures", "[]SupportedFeatureKey", "3+",
          f("Name", "string", "3+", map_key=True),
          f("MinVersion", "int16", "3+"),
          f("MaxVersion", "int16", "3+"),
          tag=0, ignorable=True),
        f("FinalizedFeaturesEpoch", "int64", "3+", default=-1, tag=1, ignorable=True),
        f("FinalizedFeatures", "[]FinalizedFeatureKey", "3+",
          f("Name", "string", "3+", map_key=True),
          f("MaxVersionLevel", "int16", "3+"),
          f("MinVersionLevel", "int16", "3+"),
          tag=2, ignorable=True),
        f("ZkMigrationReady", "bool", "3+", tag=3, ignorable=True),
    ),
)  # fmt: skip

MESSAGES = (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE)

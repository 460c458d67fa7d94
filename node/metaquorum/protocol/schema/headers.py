"""RequestHeader (versions 1-2, flexible 2+) and ResponseHeader (versions 0-1, flexible 1+).

ClientId keeps its int16-length encoding even in the flexible v2 header (flexible versions
"none" on that field) so any server can parse an ApiVersions request header (KIP-482, KIP-511).
Request header v0 was removed in Kafka 4. Facts: Kafka 4.3.1 jar.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Message, f

REQUEST_HEADER = Message(
    "RequestHeader", "header", "1-2", "2+",
    fields=(
        f("RequestApiKey", "int16", "0+"),
        f("RequestApiVersion", "int16", "0+"),
        f("CorrelationId", "int32", "0+"),
        f("ClientId", "string", "1+", nullable="1+", flexible="none"),
    ),
)  # fmt: skip

RESPONSE_HEADER = Message(
    "ResponseHeader", "header", "0-1", "1+",
    fields=(f("CorrelationId", "int32", "0+"),),
)  # fmt: skip

MESSAGES = (REQUEST_HEADER, RESPONSE_HEADER)

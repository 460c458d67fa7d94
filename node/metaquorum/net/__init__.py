"""The network layer under both the node (`runtime`) and its clients (`admin`, and through it
the operator): endpoints, Kafka framing, and the Kafka-framed TCP connection (issue 13).

Modules: `endpoint` (host:port, `ConfigError`), `wire` (frames, request/response headers,
envelopes), `connection` (`KafkaConnection`: correlation ids, timeouts, reconnect backoff).
Depends on `protocol` only; `runtime` and `admin` both build on it, and `admin` never imports
`runtime` (an import-linter contract).
"""

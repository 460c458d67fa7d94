"""Kafka wire format for KRaft: our own schema definitions, generated message classes, primitive
codecs, request/response headers and RecordBatch v2 (KIP-482 tagged fields, KIP-595 RPCs).

Map of the package:
- `types`: primitives, `ByteReader` (bounds-checked), writers, `Uuid`, `RawTaggedField`;
- `errors`: `Errors` (all of Kafka 4.3.1's error codes), `ProtocolError` (the one decode error);
- `api_keys`: `ApiKeys`, version ranges, `request_header_version` / `response_header_version`;
- `schema/`: our declarative message definitions, one module per API family;
- `codegen` (+ `codegen_structs`): writes `messages/` from `schema/` (`make generate`);
- `messages`: generated frozen dataclasses, `MESSAGES` / `REQUESTS` / `RESPONSES` registries;
- `json_form`: Kafka's JsonConverter JSON form (`to_json`, `from_json`, `dumps`);
- `records`, `control_records`: RecordBatch v2, records and KRaft control records.
"""

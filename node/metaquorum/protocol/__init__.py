"""Kafka wire format for KRaft: our own schema definitions, generated message classes, primitive
codecs, request/response headers and RecordBatch v2 (KIP-482 tagged fields, KIP-595 RPCs).
"""

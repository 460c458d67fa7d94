"""Our declarative definitions of every KRaft-relevant Kafka message, one module per API family.

Role: the single source from which `codegen` writes `protocol/messages/*.py` and from which
`json_form` derives Kafka's JSON form. `ALL` lists every message in generation order;
`FAMILIES` maps each generated module name to its messages. Every version range, flexible range,
field, type, default, nullability, tag and ignorable flag matches Kafka 4.3.1 (checked by the
conformance tests against Kafka's jar).
"""

from __future__ import annotations

from metaquorum.protocol.schema import (
    api_versions,
    control,
    describe_cluster,
    describe_quorum,
    fetch,
    fetch_snapshot,
    headers,
    produce,
    quorum_epoch,
    quorum_state,
    raft_voters,
    update_features,
    vote,
)
from metaquorum.protocol.schema.dsl import Field, Message, Struct, Versions

FAMILIES: dict[str, tuple[Message, ...]] = {
    "headers": headers.MESSAGES,
    "api_versions": api_versions.MESSAGES,
    "vote": vote.MESSAGES,
    "quorum_epoch": quorum_epoch.MESSAGES,
    "describe_quorum": describe_quorum.MESSAGES,
    "fetch": fetch.MESSAGES,
    "fetch_snapshot": fetch_snapshot.MESSAGES,
    "describe_cluster": describe_cluster.MESSAGES,
    "raft_voters": raft_voters.MESSAGES,
    "control": control.MESSAGES,
    "quorum_state": quorum_state.MESSAGES,
    "produce": produce.MESSAGES,
    "update_features": update_features.MESSAGES,
}

ALL: tuple[Message, ...] = tuple(m for family in FAMILIES.values() for m in family)
BY_NAME: dict[str, Message] = {m.name: m for m in ALL}

__all__ = ["ALL", "BY_NAME", "FAMILIES", "Field", "Message", "Struct", "Versions"]

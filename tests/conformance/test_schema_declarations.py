"""Our message schemas against the schemas inside the pinned Kafka jars, field by field
(issue 12): versions, nullableVersions, taggedVersions and tag, default, ignorable, mapKey,
field-level flexibleVersions, the field order, and each message's validVersions,
flexibleVersions, apiKey and type. The value-level oracle (`test_messages_conformance.py`)
only compares values we generate; a field declared differently (say nullable only on our side)
could pass it, so the declarations are compared here, and the values there are generated from
Kafka's declarations, not ours. A null in every field Kafka allows it goes through the oracle
both ways for every message and version.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from metaquorum.protocol.schema import BY_NAME
from metaquorum.protocol.schema.dsl import Field

from tests.conformance.oracle_client import KafkaOracle
from tests.conformance.test_messages_conformance import PAIRS, _check_both_ways
from tests.support.kafka_schemas import compare_message, load_kafka_schemas, message_from_kafka
from tests.support.message_strategies import all_nulls

pytestmark = pytest.mark.conformance


def test_every_field_is_declared_as_kafka_declares_it(kafka_lib: Path) -> None:
    kafka = load_kafka_schemas(kafka_lib)
    missing = sorted(set(BY_NAME) - set(kafka))
    assert not missing, f"messages Kafka's jars do not define: {missing}"
    diffs = [d for name in sorted(BY_NAME) for d in compare_message(BY_NAME[name], kafka[name])]
    assert not diffs, f"{len(diffs)} declarations differ from Kafka's:\n" + "\n".join(diffs)
    assert len(BY_NAME) >= 32


def test_the_comparison_sees_a_difference(kafka_lib: Path) -> None:
    """The comparator itself: a schema that differs from Kafka's in each property is flagged."""
    import dataclasses

    kafka = load_kafka_schemas(kafka_lib)
    ours = message_from_kafka(kafka["VoteRequest"])
    assert compare_message(ours, kafka["VoteRequest"]) == []
    cluster = ours.fields[0]
    for change in (
        {"nullable": "none"},
        {"null_default": False},
        {"ignorable": True},
        {"map_key": True},
        {"versions": "1+"},
        {"tag": 7, "tagged": "0+"},
    ):
        changed = dataclasses.replace(cluster, **change)  # type: ignore[arg-type]
        msg = dataclasses.replace(ours, fields=(changed, *ours.fields[1:]), structs={})
        assert compare_message(msg, kafka["VoteRequest"]), change


def _replaced(fields: tuple[Field, ...], path: list[str], **change: object) -> tuple[Field, ...]:
    """`fields` with the field at `path` (names, outermost first) changed."""
    import dataclasses

    out = []
    for fld in fields:
        if fld.name == path[0]:
            if len(path) == 1:
                fld = dataclasses.replace(fld, **change)  # type: ignore[arg-type]
            else:
                fld = dataclasses.replace(fld, fields=_replaced(fld.fields, path[1:], **change))
        out.append(fld)
    return tuple(out)


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("QuorumStateData", ["CurrentVoters"]),
        ("FetchResponse", ["Responses", "Partitions", "AbortedTransactions"]),
    ],
)
def test_the_comparison_sees_a_nullable_array_of_structs(
    kafka_lib: Path, name: str, path: list[str]
) -> None:
    """Issue 34: the arrays of structs Kafka declares nullable, nested ones included; a
    declaration that drops their nullableVersions (or adds one to an array Kafka's is not
    nullable, its parent) is flagged."""
    import dataclasses

    kafka = load_kafka_schemas(kafka_lib)
    ours = message_from_kafka(kafka[name])
    assert not [d for d in compare_message(ours, kafka[name]) if "nullableVersions" in d]
    for at, nullable in ((path, "none"), (path[:-1], "0+")):
        if not at:
            continue
        msg = dataclasses.replace(
            ours, fields=_replaced(ours.fields, at, nullable=nullable), structs={}
        )
        diffs = compare_message(msg, kafka[name])
        assert any(f".{at[-1]}: nullableVersions" in d for d in diffs), (at, diffs)


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
def test_null_wherever_kafka_allows_it(
    kafka_oracle: KafkaOracle, kafka_lib: Path, name: str, version: int
) -> None:
    spec = message_from_kafka(load_kafka_schemas(kafka_lib)[name])
    _check_both_ways(kafka_oracle, name, version, all_nulls(name, version, spec))

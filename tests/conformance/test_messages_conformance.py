"""Message conformance: our codecs against Kafka's generated message classes (via the oracle).

For every message in metaquorum.protocol.messages.MESSAGES and every version, many generated values
go both ways: our bytes decoded by Kafka give Kafka JSON equal to ours, and our `from_json` reads
that JSON of Kafka's back to our value; Kafka's bytes for our JSON equal our bytes; our decode of
Kafka's bytes equals our value. The first tests check the oracle
itself (Kafka agreeing with itself and with hand-derived bytes) so that a failure below is ours.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.json_form import dumps, from_json, to_json
from metaquorum.protocol.messages import MESSAGES
from metaquorum.protocol.schema import BY_NAME
from metaquorum.protocol.schema.dsl import Field, Message

from tests.conformance.oracle_client import (
    DAMAGE_VERDICTS,
    MESSAGE_COVERAGE,
    KafkaOracle,
    OracleDied,
    OracleError,
    build_oracle,
)
from tests.support.kafka_schemas import load_kafka_schemas, message_from_kafka
from tests.support.message_strategies import strategy_for

pytestmark = pytest.mark.conformance

VOTE_V2 = {
    "clusterId": "abc",
    "voterId": 3,
    "topics": [
        {
            "topicName": "__cluster_metadata",
            "partitions": [
                {
                    "partitionIndex": 0,
                    "replicaEpoch": 5,
                    "replicaId": 1,
                    "replicaDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ",
                    "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA",
                    "lastOffsetEpoch": 4,
                    "lastOffset": 100,
                    "preVote": True,
                }
            ],
        }
    ],
}


def test_oracle_vote_request_both_ways(kafka_oracle: KafkaOracle) -> None:
    data = kafka_oracle.encode("VoteRequest", 2, VOTE_V2)
    # Hand-derived from the schema (reference §1.3, §2.3): compact nullable string "abc",
    # int32 voterId, compact arrays, int32/int64 fields, 16-byte uuids, bool, empty tag sections.
    expected = (
        "04616263" + "00000003" + "02" + "13" + b"__cluster_metadata".hex() + "02"
        "00000000"
        + "00000005"
        + "00000001"
        + "00" * 15
        + "01"
        + "00" * 16
        + "00000004"
        + "0000000000000064"
        + "01"
        + "00"
        + "00"
        + "00"
    )
    assert data.hex() == expected
    json_form, again = kafka_oracle.decode("VoteRequest", 2, data)
    assert json_form == VOTE_V2
    assert again == data


def test_oracle_answers_bad_input(kafka_oracle: KafkaOracle) -> None:
    with pytest.raises(OracleError, match="leftover"):
        kafka_oracle.decode("SnapshotFooterRecord", 0, bytes.fromhex("0000" + "00" + "ff"))
    with pytest.raises(OracleError):
        kafka_oracle.decode("VoteRequest", 0, b"\x00")
    with pytest.raises(OracleError, match="unknown message"):
        kafka_oracle.encode("NoSuchMessage", 0, {})
    # A partial batch is not an error to Kafka: it is left out of validBytes.
    partial = kafka_oracle.records_read(b"\x00\x01")
    assert (partial["batches"], partial["validBytes"], partial["sizeInBytes"]) == ([], 0, 2)
    # A batch whose length field is below the v2 header size is corrupt.
    with pytest.raises(OracleError, match="CorruptRecord"):
        kafka_oracle.records_read(bytes(8) + (5).to_bytes(4, "big") + bytes(5))
    reply = kafka_oracle.request({"op": "no_such_op"})
    assert reply["ok"] is False
    assert kafka_oracle.ping()


def test_oracle_death_is_reported_not_hung(kafka_lib: Path) -> None:
    with KafkaOracle(build_oracle(kafka_lib), kafka_lib, timeout=30) as oracle:
        assert oracle.ping()
        oracle.process.kill()
        oracle.process.wait(timeout=10)
        with pytest.raises(OracleDied):
            oracle.ping()


def test_oracle_batch_keeps_order(kafka_oracle: KafkaOracle) -> None:
    reqs = [
        {"op": "encode", "message": "SnapshotFooterRecord", "version": 0, "json": {"version": i}}
        for i in range(1000)
    ]
    replies = kafka_oracle.batch(reqs, chunk=128)
    assert [r["hex"] for r in replies] == [f"{i:04x}00" for i in range(1000)]


# --- every message x version, many generated values, both directions -----------------------

#: Kafka's JsonConverter writes a records field as "" (never its bytes); those fields are
#: compared through Kafka's re-encoding of our bytes instead.
RECORDS_KEYS = frozenset({"records", "unalignedRecords"})

PAIRS = [
    (name, version)
    for name, cls in sorted(MESSAGES.items())
    for version in range(cls.LOWEST_SUPPORTED_VERSION, cls.HIGHEST_SUPPORTED_VERSION + 1)
]
EXAMPLES_PER_PAIR = 60


def _drop_unshowable_records(kafka: Any, ours: Any) -> tuple[Any, Any]:
    """Remove records fields Kafka's JSON cannot show from both sides, in step."""
    if isinstance(kafka, dict) and isinstance(ours, dict):
        k2, o2 = {}, {}
        for key in kafka.keys() | ours.keys():
            if key in RECORDS_KEYS and kafka.get(key) == "":
                continue
            if key in kafka and key in ours:
                k2[key], o2[key] = _drop_unshowable_records(kafka[key], ours[key])
            elif key in kafka:
                k2[key] = kafka[key]
            else:
                o2[key] = ours[key]
        return k2, o2
    if isinstance(kafka, list) and isinstance(ours, list) and len(kafka) == len(ours):
        pairs = [_drop_unshowable_records(k, o) for k, o in zip(kafka, ours, strict=True)]
        return [k for k, _ in pairs], [o for _, o in pairs]
    return kafka, ours


def _without_unknown_tags(value: Any) -> Any:
    """The same message with every struct's unknown tagged fields emptied (JSON cannot carry
    them, so Kafka's encoding of our JSON has none)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _without_unknown_tags(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "unknown_tagged_fields"
        }
        if hasattr(value, "unknown_tagged_fields"):
            changes["unknown_tagged_fields"] = type(value.unknown_tagged_fields)()
        return dataclasses.replace(value, **changes)
    if isinstance(value, list):
        return [_without_unknown_tags(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_without_unknown_tags(v) for v in value)
    return value


@functools.cache
def _strategy(name: str, version: int, kafka_lib: Path) -> st.SearchStrategy[Any]:
    """Values drawn from *Kafka's* declaration of the message (the schema in its jar), so a
    field we declared differently is exercised as Kafka sees it (issue 12)."""
    spec = message_from_kafka(load_kafka_schemas(kafka_lib)[name])
    return strategy_for(name, version, spec=spec)


def _reuses_a_known_tag(spec: Message, fields: tuple[Field, ...], value: Any, version: int) -> bool:
    """Whether a struct in `value` carries an "unknown" tagged field whose tag the struct knows
    in another version. Kafka's generated readers reject that ("Tag N is not valid for version
    V"), so such a value is no valid Kafka input; the drawn values are filtered on it."""
    known = {f.tag for f in fields if f.tag is not None}
    if any(raw.tag in known for raw in getattr(value, "unknown_tagged_fields", ())):
        return True
    for f in fields:
        if version not in f.version_range():
            continue
        if f.is_array:
            elem = Field(f.name, f.element_type, f.versions, fields=f.fields)
            if elem.is_struct:
                sub = spec.struct_fields(f.element_type)
                items = getattr(value, f.py_name) or []
                if any(_reuses_a_known_tag(spec, sub, item, version) for item in items):
                    return True
        elif f.is_struct:
            sub = spec.struct_fields(f.element_type)
            if _reuses_a_known_tag(spec, sub, getattr(value, f.py_name), version):
                return True
    return False


def _with_records(
    spec: Message, fields: tuple[Field, ...], value: Any, js: Any, version: int
) -> Any:
    """`js` (our JSON of `value`) with each records field holding its bytes in base64, which
    Kafka's JsonConverter reads (it only ever writes "" there)."""
    if not isinstance(js, dict):
        return js
    out = dict(js)
    for f in fields:
        if f.json_name not in js or js[f.json_name] is None:
            continue
        v = getattr(value, f.py_name)
        if f.type == "records":
            out[f.json_name] = base64.b64encode(v).decode("ascii")
        elif f.is_array:
            elem = Field(f.name, f.element_type, f.versions, fields=f.fields)
            if elem.is_struct:
                sub = spec.struct_fields(f.element_type)
                out[f.json_name] = [
                    _with_records(spec, sub, item, j, version)
                    for item, j in zip(v, js[f.json_name], strict=True)
                ]
        elif f.is_struct:
            sub = spec.struct_fields(f.element_type)
            out[f.json_name] = _with_records(spec, sub, v, js[f.json_name], version)
    return out


def _check_both_ways(oracle: KafkaOracle, name: str, version: int, msg: Any) -> None:
    cls = MESSAGES[name]
    ours = msg.encode(version)
    our_json = to_json(msg, version)
    where = f"{name} v{version}, our bytes {ours.hex()}"
    spec = BY_NAME[name]
    kafka_input = _with_records(spec, spec.fields, msg, our_json, version)
    decoded, encoded = oracle.batch(
        [
            {"op": "decode", "message": name, "version": version, "hex": ours.hex()},
            {"op": "encode", "message": name, "version": version, "json": kafka_input},
        ]
    )
    # 1. our bytes -> Kafka: it reads them, sees the value we meant, and writes them back alike.
    assert decoded["ok"], f"Kafka cannot decode {where}: {decoded['exception']}: {decoded['error']}"
    assert decoded["hex"] == ours.hex(), f"Kafka re-encodes {where} differently: {decoded}"
    kafka_json, mine = _drop_unshowable_records(decoded["json"], our_json)
    assert kafka_json == mine, f"Kafka reads other values from {where}"
    # ... and our JSON text is its JsonConverter's, character for character (key order, escapes).
    assert dumps(our_json) == decoded["jsonText"], f"our JSON text of {where} differs from Kafka's"
    # ... and we read Kafka's JSON (`metaquorum protocol encode` takes it), nulls included
    # (issue 34: a null array of structs was refused) to our value less what JSON cannot carry:
    # unknown tagged fields (Kafka writes a tagged struct holding only those, as its default
    # values, and reads it back as the default) and records bytes (Kafka shows them as "").
    plain = _without_unknown_tags(msg)
    try:
        back = from_json(cls, decoded["json"], version)
    except ProtocolError as exc:
        pytest.fail(f"we cannot read Kafka's JSON of {where}: {exc}")
    assert to_json(back, version) == to_json(plain, version), f"we read {where}'s JSON otherwise"
    if kafka_json == decoded["json"]:  # every records field shown (null), none as ""
        assert back == plain, f"we read other values from Kafka's JSON of {where}"
    # 2. our JSON -> Kafka bytes: the same bytes, and our decoder reads our value back.
    assert encoded["ok"], f"Kafka cannot encode our JSON of {where}: {encoded['error']}"
    theirs = bytes.fromhex(encoded["hex"])
    assert theirs.hex() == plain.encode(version).hex(), f"Kafka writes other bytes for {where}"
    assert cls.decode(theirs, version) == plain, f"we read Kafka's bytes of {where} differently"
    MESSAGE_COVERAGE[(name, version)] += 1


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@settings(
    max_examples=EXAMPLES_PER_PAIR,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_message_both_ways(
    kafka_oracle: KafkaOracle, kafka_lib: Path, name: str, version: int, data: st.DataObject
) -> None:
    msg = data.draw(_strategy(name, version, kafka_lib), label=f"{name} v{version}")
    spec = BY_NAME[name]
    assume(not _reuses_a_known_tag(spec, spec.fields, msg, version))
    _check_both_ways(kafka_oracle, name, version, msg)


def test_defaults_match_kafka(kafka_oracle: KafkaOracle) -> None:
    """`<Name>Data()` with no arguments: Kafka's `new <Name>Data()` at every version has the same
    JSON and the same bytes, and we read Kafka's bytes back to our default instance. This checks
    every field default independently of the generated values above."""
    replies = kafka_oracle.batch([{"op": "default", "message": n, "version": v} for n, v in PAIRS])
    failures = []
    for (name, version), reply in zip(PAIRS, replies, strict=True):
        cls = MESSAGES[name]
        ours = cls()
        if not reply["ok"]:
            failures.append(f"{name} v{version}: Kafka cannot write its default: {reply['error']}")
            continue
        if reply["json"] != to_json(ours, version):
            failures.append(f"{name} v{version}: {reply['json']} != {to_json(ours, version)}")
        if reply["hex"] != ours.encode(version).hex():
            failures.append(f"{name} v{version}: {reply['hex']} != {ours.encode(version).hex()}")
        elif cls.decode(bytes.fromhex(reply["hex"]), version) != ours:
            failures.append(f"{name} v{version}: we decode Kafka's default differently")
    assert not failures, "\n".join(failures)


# --- damaged bytes: the two decoders agree on what they accept --------------------------------

DAMAGE_EXAMPLES_PER_PAIR = 20


def _damage(data: st.DataObject, good: bytes) -> bytes:
    """Truncate, flip, insert or delete one byte of `good`."""
    how = data.draw(st.sampled_from(["truncate", "flip", "insert", "delete"]), label="damage")
    if how == "truncate" or not good:
        return good[: data.draw(st.integers(0, max(len(good) - 1, 0)), label="cut")]
    i = data.draw(st.integers(0, len(good) - 1), label="at")
    if how == "flip":
        return good[:i] + bytes([good[i] ^ data.draw(st.integers(1, 255))]) + good[i + 1 :]
    if how == "insert":
        return good[:i] + bytes([data.draw(st.integers(0, 255))]) + good[i:]
    return good[:i] + good[i + 1 :]


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@settings(
    max_examples=DAMAGE_EXAMPLES_PER_PAIR,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_damaged_bytes_decoders_agree(
    kafka_oracle: KafkaOracle, kafka_lib: Path, name: str, version: int, data: st.DataObject
) -> None:
    """Our decoder raises only ProtocolError; whatever it accepts Kafka accepts too, with the
    same values and the same bytes written back. (Kafka may accept what we refuse, e.g. invalid
    UTF-8 that Java decodes to U+FFFD; those cases are counted, not failed.)"""
    cls = MESSAGES[name]
    bad = _damage(data, data.draw(_strategy(name, version, kafka_lib)).encode(version))
    try:
        ours = cls.decode(bad, version)
    except ProtocolError:
        ours = None
    kafka = kafka_oracle.request(
        {"op": "decode", "message": name, "version": version, "hex": bad.hex()}
    )
    verdict = (
        "ours ok" if ours is not None else "ours rejects",
        "kafka ok" if kafka["ok"] else "kafka rejects",
    )
    DAMAGE_VERDICTS[", ".join(verdict)] += 1
    if ours is None:
        return
    where = f"{name} v{version}, damaged bytes {bad.hex()}"
    assert kafka["ok"], f"we accept but Kafka rejects {where}: {kafka['error']}"
    kafka_json, mine = _drop_unshowable_records(kafka["json"], to_json(ours, version))
    assert kafka_json == mine, f"Kafka reads other values from {where}"
    if kafka["hex"] is None:
        # Kafka read it but refuses to write it back (e.g. unknown tags out of order).
        DAMAGE_VERDICTS["kafka cannot write back"] += 1
        return
    assert kafka["hex"] == ours.encode(version).hex(), f"Kafka writes {where} back differently"

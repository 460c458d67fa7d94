"""Every message x version: decode(encode(x)) == x and encode(decode(b)) == b, plus JSON both ways.

Values come from `tests.support.message_strategies` (derived from the schema), so a new field or
version is covered without touching this file.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metaquorum.protocol.json_form import dumps, from_json, to_json
from metaquorum.protocol.messages import MESSAGES

from tests.support.message_strategies import all_message_versions, strategy_for

PAIRS = all_message_versions()
FAST = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_message_has_versions() -> None:
    names = {name for name, _ in PAIRS}
    assert names == set(MESSAGES)
    assert len(PAIRS) == 118  # 34 messages, 118 (message, version) pairs in Kafka 4.3.1


def _strip_unknown(value: Any) -> Any:
    """JSON cannot carry unknown tagged fields (Kafka omits them)."""
    if hasattr(value, "unknown_tagged_fields"):
        changes = {
            f.name: _strip_unknown(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
        changes["unknown_tagged_fields"] = []
        return dataclasses.replace(value, **changes)
    if isinstance(value, list):
        return [_strip_unknown(v) for v in value]
    return value


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@FAST
@given(data=st.data())
def test_binary_roundtrip(name: str, version: int, data: st.DataObject) -> None:
    cls = MESSAGES[name]
    msg = data.draw(strategy_for(name, version))
    encoded = msg.encode(version)
    decoded = cls.decode(encoded, version)
    assert decoded == msg
    assert decoded.encode(version) == encoded
    # The writer appends to a caller's buffer; read() continues from a reader position.
    out = bytearray(b"\x07")
    msg.write(out, version)
    assert bytes(out[1:]) == encoded


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@FAST
@given(data=st.data())
def test_json_roundtrip(name: str, version: int, data: st.DataObject) -> None:
    cls = MESSAGES[name]
    msg = data.draw(strategy_for(name, version, unknown_tags=False))
    obj = to_json(msg, version)
    back = from_json(cls, obj, version)
    # Kafka writes records as "" (not their bytes): compare through the JSON again.
    assert to_json(back, version) == obj
    assert dumps(to_json(back, version)) == dumps(obj)
    if "records" not in dumps(obj).lower():
        assert back == _strip_unknown(msg)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_binary_roundtrip_long(name: str, version: int, data: st.DataObject) -> None:
    cls = MESSAGES[name]
    msg = data.draw(strategy_for(name, version))
    encoded = msg.encode(version)
    assert cls.decode(encoded, version) == msg
    assert cls.decode(encoded, version).encode(version) == encoded


def test_strategy_for_refuses_unknown_names_and_versions() -> None:
    with pytest.raises(ValueError, match="unknown message"):
        strategy_for("NoSuchRequest", 0)
    with pytest.raises(ValueError, match="no version 3"):
        strategy_for("FetchRequest", 3)


def test_from_json_reads_like_kafka() -> None:
    from metaquorum.protocol.errors import ProtocolError
    from metaquorum.protocol.messages import QuorumStateData, VoteRequestData

    # A quorum-state file as Kafka 4.3.1 writes it (reference §10): data_version is ignored.
    text = (
        '{"leaderId":1,"leaderEpoch":1,"votedId":-1,'
        '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    )
    import json

    state = from_json(QuorumStateData, json.loads(text), 1)
    assert state == QuorumStateData(leader_id=1, leader_epoch=1, voted_id=-1)
    with pytest.raises(ProtocolError, match="data_version"):
        from_json(QuorumStateData, json.loads(text), 1, strict=True)
    # Missing mandatory field, wrong type: refused (Kafka refuses both too).
    with pytest.raises(ProtocolError, match="mandatory in version 1"):
        from_json(VoteRequestData, {"clusterId": None, "topics": []}, 1)
    with pytest.raises(ProtocolError, match="integer"):
        from_json(VoteRequestData, {"clusterId": None, "topics": [], "voterId": "5"}, 1)

"""Fuzz every decoder: random and mutated bytes give a value or ProtocolError, nothing else.

A value that decodes must also re-encode without any other exception (it may not give the same
bytes: a bool byte 2 reads as true, a default tagged field sent explicitly is not re-sent).
"""

from __future__ import annotations

import contextlib
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.messages import MESSAGES
from metaquorum.protocol.types import Uuid

from tests.support.message_strategies import all_message_versions, strategy_for

PAIRS = all_message_versions()
IDS = [f"{n}-v{v}" for n, v in PAIRS]
HUGE = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f"]


def _decode_or_protocol_error(cls: type, data: bytes, version: int) -> None:
    try:
        value = cls.decode(data, version)  # type: ignore[attr-defined]
    except ProtocolError:
        return
    with contextlib.suppress(ProtocolError):
        value.encode(version)


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
@settings(max_examples=10, deadline=None)
@given(data=st.binary(max_size=64))
def test_random_bytes(name: str, version: int, data: bytes) -> None:
    _decode_or_protocol_error(MESSAGES[name], data, version)


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_mutated_valid_bytes(name: str, version: int, data: st.DataObject, seed: int) -> None:
    cls = MESSAGES[name]
    good = data.draw(strategy_for(name, version)).encode(version)
    rng = random.Random(seed)
    for _ in range(8):
        buf = bytearray(good)
        op = rng.randrange(4)
        if op == 0 and buf:  # flip a byte
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif op == 1:  # truncate
            del buf[rng.randrange(len(buf) + 1) :]
        elif op == 2:  # insert bytes
            pos = rng.randrange(len(buf) + 1)
            buf[pos:pos] = rng.randbytes(rng.randrange(1, 5))
        else:  # a huge length / varint somewhere
            pos = rng.randrange(len(buf) + 1)
            buf[pos:pos] = rng.choice(
                [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f"]
            )
        _decode_or_protocol_error(cls, bytes(buf), version)


def test_truncation_of_every_prefix_is_a_protocol_error() -> None:
    # Deterministic: every strict prefix of a rich Fetch response fails cleanly.
    cls = MESSAGES["FetchResponse"]
    part = cls.PartitionData(
        partition_index=3, records=b"abc", current_leader=cls.LeaderIdAndEpoch(1, 2)
    )
    value = cls(
        responses=[cls.FetchableTopicResponse(topic_id=Uuid.ONE, partitions=[part, part])],
        node_endpoints=[cls.NodeEndpoint(node_id=1, host="h", port=1, rack="r")],
    )
    good = value.encode(18)
    for cut in range(len(good)):
        with pytest.raises(ProtocolError):
            cls.decode(good[:cut], 18)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=256))
def test_random_bytes_long(name: str, version: int, data: bytes) -> None:
    _decode_or_protocol_error(MESSAGES[name], data, version)

"""Primitives: varints, strings, Uuid text form, and the bounds-checked reader."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from metaquorum.protocol import types as t
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.types import ByteReader, Uuid


def test_uuid_text_form_matches_kafka() -> None:
    # Strings printed by Kafka 4.3.1's org.apache.kafka.common.Uuid#toString (the oracle).
    assert str(Uuid(0x0123456789ABCDEF, -0x0123456789ABCDF0)) == "ASNFZ4mrze_-3LqYdlQyEA"
    assert str(Uuid(-1, -2)) == "_____________________g"
    assert Uuid.from_string("_____________________w").most_significant_bits == -1
    assert str(Uuid.ZERO) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert str(Uuid.ONE) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert Uuid.METADATA_TOPIC_ID == Uuid.ONE


@pytest.mark.parametrize("bad", ["", "abc", "A" * 25, "AAAAAAAAAAAAAAAAAAAA*A", "AAAA"])
def test_uuid_from_bad_string(bad: str) -> None:
    with pytest.raises(ProtocolError):
        Uuid.from_string(bad)


def test_uuid_random_never_reserved() -> None:
    rng = random.Random(7)
    seen = {Uuid.random(rng) for _ in range(2000)}
    assert len(seen) == 2000
    assert Uuid.ZERO not in seen and Uuid.ONE not in seen
    assert not any(str(u).startswith("-") for u in seen)
    assert Uuid.random(random.Random(3)) == Uuid.random(random.Random(3))


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1))
def test_uuid_roundtrip(msb: int, lsb: int) -> None:
    u = Uuid(msb, lsb)
    assert len(str(u)) == 22
    assert Uuid.from_string(str(u)) == u
    assert Uuid.from_bytes(u.bytes) == u
    assert ByteReader(u.bytes).read_uuid() == u


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**31 - 1, b"\xff\xff\xff\xff\x07"),
        (-1, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_unsigned_varint_known(value: int, encoded: bytes) -> None:
    out = bytearray()
    t.write_unsigned_varint(out, value)
    assert bytes(out) == encoded
    assert ByteReader(encoded).read_unsigned_varint() == value & 0xFFFFFFFF
    assert t.unsigned_varint_size(value) == len(encoded)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01")],
)
def test_zigzag_varint_known(value: int, encoded: bytes) -> None:
    out = bytearray()
    t.write_varint(out, value)
    assert bytes(out) == encoded
    assert ByteReader(encoded).read_varint() == value


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_roundtrip(value: int) -> None:
    out = bytearray()
    t.write_varlong(out, value)
    assert ByteReader(out).read_varlong() == value


def test_varint_too_long() -> None:
    with pytest.raises(ProtocolError, match="varint"):
        ByteReader(b"\xff\xff\xff\xff\xff\x01").read_unsigned_varint()
    with pytest.raises(ProtocolError, match="truncated"):
        ByteReader(b"\xff").read_unsigned_varint()


def test_strings() -> None:
    out = bytearray()
    t.write_string(out, "héllo")
    assert bytes(out) == b"\x00\x06h\xc3\xa9llo"
    out = bytearray()
    t.write_compact_nullable_string(out, None)
    t.write_compact_string(out, "ab")
    t.write_nullable_string(out, None)
    assert bytes(out) == b"\x00\x03ab\xff\xff"
    r = ByteReader(out)
    assert r.read_compact_nullable_string() is None
    assert r.read_compact_string() == "ab"
    assert r.read_nullable_string() is None
    r.ensure_end("test")


@pytest.mark.parametrize(
    ("data", "method"),
    [
        (b"\x00\x02\xff\xfe", "read_string"),  # bad UTF-8
        (b"\xff\xff", "read_string"),  # null in a non-nullable string
        (b"\x00\x05ab", "read_string"),  # truncated
        (b"\x00", "read_compact_string"),  # null compact
        (b"\xff\xff\xff\xfe", "read_nullable_bytes"),  # length -2
        (b"\x00\x00\x00\x09", "read_array_length"),  # more elements than bytes
        (b"\x00", "read_int16"),
        (b"", "read_bool"),
        (b"\x00" * 15, "read_uuid"),
    ],
)
def test_reader_errors_are_protocol_errors(data: bytes, method: str) -> None:
    with pytest.raises(ProtocolError):
        getattr(ByteReader(data), method)()


def test_reader_over_memoryview_and_window() -> None:
    buf = memoryview(b"\x00\x00\x00\x01\x00\x00\x00\x02")
    r = ByteReader(buf, 4)
    assert r.read_int32() == 2
    with pytest.raises(ProtocolError):
        ByteReader(buf, 0, 2).read_int32()

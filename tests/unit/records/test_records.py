"""RecordBatch v2 / Record codec: golden bytes from the layout, round trips, fuzz."""

from __future__ import annotations

import contextlib
import random
import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.records import (
    CONTROL_FLAG_MASK,
    RECORD_BATCH_OVERHEAD,
    Header,
    RecordBatch,
    SimpleRecord,
    build_batch,
    iter_batches,
    iter_valid_batches,
    read_varint,
    read_varlong,
    size_of_varint,
    size_of_varlong,
    valid_prefix,
    write_varint,
    write_varlong,
)

# ZigZag varint facts from the protobuf encoding spec (and Kafka's ByteUtilsTest).
VARINT_GOLDEN = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (2**31 - 1, "feffffff0f"),
    (-(2**31), "ffffffff0f"),
]


@pytest.mark.parametrize(("value", "hexed"), VARINT_GOLDEN)
def test_varint_golden(value: int, hexed: str) -> None:
    out = bytearray()
    write_varint(out, value)
    assert out.hex() == hexed
    assert size_of_varint(value) == len(out)
    assert read_varint(bytes(out), 0) == (value, len(out))


def test_varlong_extremes() -> None:
    out = bytearray()
    write_varlong(out, -(2**63))
    assert out.hex() == "ff" * 9 + "01"
    assert read_varlong(bytes(out), 0) == (-(2**63), 10)
    out = bytearray()
    write_varlong(out, 2**63 - 1)
    assert out.hex() == "fe" + "ff" * 8 + "01"


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(v: int) -> None:
    out = bytearray()
    write_varint(out, v)
    assert read_varint(bytes(out), 0) == (v, size_of_varint(v))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(v: int) -> None:
    out = bytearray()
    write_varlong(out, v)
    assert read_varlong(bytes(out), 0) == (v, size_of_varlong(v))


def test_varint_too_long_and_truncated() -> None:
    with pytest.raises(ProtocolError):
        read_varint(b"\xff\xff\xff\xff\xff\x01", 0)
    with pytest.raises(ProtocolError):
        read_varint(b"\x80\x80", 0)
    with pytest.raises(ProtocolError):
        read_varlong(b"\xff" * 11, 0)


def test_crc32c_library_is_castagnoli() -> None:
    # The standard CRC-32C check value (RFC 3720 appendix B.4 / "123456789").
    assert crc32c.crc32c(b"123456789") == 0xE3069283


def _hand_built_batch() -> bytes:
    """One record, value b"abc", null key, no headers: laid out by hand from reference §3.1."""
    record_body = bytes([0x00, 0x00, 0x00, 0x01, 0x06]) + b"abc" + bytes([0x00])
    records = bytes([len(record_body) * 2]) + record_body  # zigzag length
    tail = struct.pack(">hiqqqhii", 0, 0, 1234, 1234, -1, -1, -1, 1) + records
    crc = crc32c.crc32c(tail)
    head = struct.pack(">qiibI", 42, 4 + 1 + 4 + len(tail), 7, 2, crc)
    return head + tail


def test_golden_batch_bytes() -> None:
    expected = _hand_built_batch()
    built = build_batch(42, 7, [b"abc"], timestamp_ms=1234)
    assert built == expected
    assert len(built) == RECORD_BATCH_OVERHEAD + 10


def test_read_hand_built_batch() -> None:
    [batch] = iter_valid_batches(_hand_built_batch())
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (42, 42, 7)
    assert batch.records_count == 1 and not batch.is_control and not batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    [rec] = list(batch)
    assert (rec.offset, rec.timestamp, rec.key, rec.value, rec.headers) == (
        42,
        1234,
        None,
        b"abc",
        (),
    )


def test_partition_leader_epoch_is_outside_crc() -> None:
    buf = bytearray(build_batch(0, 1, [b"x"], timestamp_ms=0))
    struct.pack_into(">i", buf, 12, 99)
    [batch] = iter_batches(bytes(buf))
    assert batch.is_valid() and batch.partition_leader_epoch == 99


def test_control_flag_and_attributes() -> None:
    b = build_batch(0, 1, [SimpleRecord(b"v", b"k")], timestamp_ms=5, control=True)
    [batch] = iter_batches(b)
    assert batch.is_control and batch.attributes == CONTROL_FLAG_MASK


def test_compressed_batch_is_refused_clearly() -> None:
    buf = bytearray(build_batch(0, 1, [b"x"], timestamp_ms=0))
    struct.pack_into(">h", buf, 21, 4)  # zstd
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    [batch] = iter_valid_batches(bytes(buf))
    with pytest.raises(ProtocolError, match="compressed \\(zstd\\)"):
        list(batch)


def test_bad_magic_length_crc() -> None:
    good = build_batch(0, 1, [b"x"], timestamp_ms=0)
    bad_magic = bytearray(good)
    bad_magic[16] = 1
    with pytest.raises(ProtocolError, match="magic"):
        list(iter_batches(bytes(bad_magic)))
    bad_len = bytearray(good)
    struct.pack_into(">i", bad_len, 8, 10)
    with pytest.raises(ProtocolError, match="too small"):
        list(iter_batches(bytes(bad_len)))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0x01
    with pytest.raises(ProtocolError, match="CRC"):
        list(iter_valid_batches(bytes(bad_crc)))


def test_partial_tail_is_skipped_or_refused() -> None:
    two = build_batch(0, 1, [b"a"], timestamp_ms=0) + build_batch(1, 1, [b"b"], timestamp_ms=0)
    cut = two[:-3]
    assert [b.base_offset for b in iter_batches(cut)] == [0]
    with pytest.raises(ProtocolError, match="truncated"):
        list(iter_batches(cut, allow_partial_tail=False))


def test_iteration_is_zero_copy() -> None:
    buf = bytearray(build_batch(0, 1, [b"a", b"b"], timestamp_ms=0))
    [batch] = iter_batches(buf)
    assert batch.buffer.obj is buf


def test_valid_prefix_stops_at_damage() -> None:
    a = build_batch(0, 1, [b"a"], timestamp_ms=0)
    b = bytearray(build_batch(1, 1, [b"b"], timestamp_ms=0))
    b[-1] ^= 0xFF
    n, batches, reason = valid_prefix(a + bytes(b))
    assert n == len(a) and len(batches) == 1 and "CRC" in reason
    assert "expected 1" in valid_prefix(a + a)[2]
    assert valid_prefix(a, first_offset=5)[0] == 0


headers_st = st.lists(
    st.builds(Header, st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))),
    max_size=3,
).map(tuple)
record_st = st.builds(
    SimpleRecord,
    st.one_of(st.none(), st.binary(max_size=64)),
    st.one_of(st.none(), st.binary(max_size=16)),
    headers_st,
    st.one_of(st.none(), st.integers(0, 2**40)),
)


@settings(max_examples=200)
@given(
    st.integers(0, 2**62),
    st.integers(-1, 2**31 - 1),
    st.lists(record_st, min_size=1, max_size=20),
    st.integers(0, 2**40),
    st.booleans(),
)
def test_batch_round_trip(
    base: int, epoch: int, recs: list[SimpleRecord], ts: int, control: bool
) -> None:
    data = build_batch(base, epoch, recs, timestamp_ms=ts, control=control)
    [batch] = iter_valid_batches(data)
    assert batch.base_offset == base and batch.last_offset == base + len(recs) - 1
    assert batch.partition_leader_epoch == epoch and batch.is_control == control
    stamps = [ts if r.timestamp_ms is None else r.timestamp_ms for r in recs]
    assert batch.base_timestamp == stamps[0] and batch.max_timestamp == max(stamps)
    got = list(batch)
    assert [r.offset for r in got] == list(range(base, base + len(recs)))
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == [
        (r.key, r.value, r.headers, s) for r, s in zip(recs, stamps, strict=True)
    ]


def _decode_all(data: bytes) -> None:
    for batch in iter_batches(data):
        batch.is_valid()
        for _ in batch:
            pass


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        _decode_all(data)


def test_fuzz_mutated_batches() -> None:
    rng = random.Random(1234)
    base = build_batch(
        3, 2, [SimpleRecord(b"value", b"key", (Header("h", b"v"),)), b"x"], timestamp_ms=9
    )
    for _ in range(3000):
        buf = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        with contextlib.suppress(ProtocolError):
            _decode_all(bytes(buf))


def test_record_batch_requires_header() -> None:
    with pytest.raises(ProtocolError):
        RecordBatch(memoryview(b"\x00" * 20))


@settings(max_examples=50)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=40), st.integers(0, 2**40))
def test_fast_path_equals_general_encoding(values: list[bytes], ts: int) -> None:
    fast = build_batch(0, 1, values, timestamp_ms=ts)
    general = build_batch(0, 1, [SimpleRecord(v, None, (), ts) for v in values], timestamp_ms=ts)
    assert fast == general


def test_fast_path_large_value_and_many_records() -> None:
    values = [b"v" * 20_000] + [b"x"] * 17_000
    fast = build_batch(0, 1, values, timestamp_ms=3)
    general = build_batch(0, 1, [SimpleRecord(v, None, (), 3) for v in values], timestamp_ms=3)
    assert fast == general
    assert [r.value for r in next(iter_valid_batches(fast))] == values


@given(st.binary(min_size=1, max_size=6))
def test_inline_varint_matches_reference(data: bytes) -> None:
    from metaquorum.protocol.records import _small_varint

    buf = memoryview(data)
    for end in range(len(data) + 1):
        try:
            want: tuple[int, int] | str = read_varint(buf, 0, end)
        except ProtocolError:
            want = "error"
        try:
            got: tuple[int, int] | str = _small_varint(buf, 0, end, read_varint)
        except ProtocolError:
            got = "error"
        assert got == want

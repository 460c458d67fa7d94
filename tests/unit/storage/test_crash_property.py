"""Property: a crash that loses any suffix of the unflushed bytes (leaving garbage of any length
in its place) recovers to a prefix of what was appended that still holds every flushed record."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.protocol.records import iter_valid_batches
from metaquorum.storage.log import LogConfig, MetadataLog

CFG = LogConfig(segment_bytes=700, index_interval_bytes=120, fsync=False)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=12),  # flushed batches (record counts)
    st.lists(st.integers(1, 5), min_size=1, max_size=8),  # unflushed batches
    st.floats(0, 1),  # how much of the unflushed bytes survive
    st.binary(max_size=80),  # garbage written after the surviving part
)
def test_crash_keeps_flushed_prefix(
    flushed: list[int], unflushed: list[int], keep: float, garbage: bytes
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "p"
        log = MetadataLog.open(d, CFG)
        values: list[bytes] = []
        for n in flushed:
            vals = [b"f%d" % (len(values) + i) for i in range(n)]
            log.append_records_as_leader(vals, 1, timestamp_ms=0)
            values += vals
        flushed_offset = log.flush()
        active_base, flushed_size = log.segments[-1].base_offset, log.segments[-1].size
        for n in unflushed:
            vals = [b"u%d" % (len(values) + i) for i in range(n)]
            log.append_records_as_leader(vals, 2, timestamp_ms=0)
            values += vals
        log.close()
        # The crash: only segments created after the flush can be lost entirely; in the
        # segment active at flush time a suffix after `flushed_size` is lost or garbled.
        segs = sorted(d.glob("*.log"))
        flushed_seg = d / f"{active_base:020d}.log"
        for p in segs:
            if int(p.stem) > active_base:
                p.unlink()
        data = flushed_seg.read_bytes()
        cut = flushed_size + int((len(data) - flushed_size) * keep)
        flushed_seg.write_bytes(data[:cut] + garbage)

        log = MetadataLog.open(d, CFG)
        assert flushed_offset <= log.log_end_offset <= len(values)
        got: list[bytes | None] = []
        while len(got) < log.log_end_offset:  # a read returns batches of one segment
            data = log.read(len(got), 1 << 30).records
            got += [r.value for b in iter_valid_batches(data) for r in b if r.offset >= len(got)]
        assert got == values[: log.log_end_offset]
        log.close()

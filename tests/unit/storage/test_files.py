"""meta.properties, quorum-state, leader-epoch-checkpoint: Kafka's forms, round trips, bad input."""

from __future__ import annotations

import bisect
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.protocol.types import Uuid
from metaquorum.storage.epoch_cache import (
    EpochCheckpointError,
    EpochEntry,
    LeaderEpochCache,
    format_checkpoint,
    parse_checkpoint,
)
from metaquorum.storage.meta_properties import (
    MetaProperties,
    MetaPropertiesError,
    dump_properties,
    parse_properties,
    read_meta_properties,
    write_meta_properties,
)
from metaquorum.storage.quorum_state import (
    QuorumStateError,
    QuorumStateFile,
    read_quorum_state,
    write_quorum_state,
)

# --- meta.properties ---------------------------------------------------------------------


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    meta = MetaProperties(
        1, "MkU3OEVBNTcwNTJENDM2Qg", 3, Uuid.from_string("J8aAPcfLQt2bqs1JT_rMgQ")
    )
    write_meta_properties(tmp_path, meta)
    text = (tmp_path / "meta.properties").read_text()
    lines = text.splitlines()
    assert lines[0] == "#" and lines[1].startswith("#")
    assert sorted(lines[2:]) == sorted(
        [
            "node.id=3",
            "directory.id=J8aAPcfLQt2bqs1JT_rMgQ",
            "version=1",
            "cluster.id=MkU3OEVBNTcwNTJENDM2Qg",
        ]
    )
    assert read_meta_properties(tmp_path) == meta
    assert not list(tmp_path.glob("*.tmp"))


def test_java_properties_rules() -> None:
    # Java's Properties.load: '#'/'!' comments, '=' ':' or whitespace separators, escapes,
    # line continuations.
    text = (
        "# comment\n! other\n  a = 1\nb:2\nc 3\nd=x\\\n   y\ne=\\u0041\\t\\=\nf\n"
        "key\\ with\\ space=v\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "xy",
        "e": "A\t=",
        "f": "",
        "key with space": "v",
    }


@given(
    st.dictionaries(
        st.text(
            st.characters(
                codec="utf-8", exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
            ),
            min_size=1,
            max_size=8,
        ),
        st.text(
            st.characters(
                codec="utf-8", exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
            ),
            max_size=8,
        ),
        max_size=5,
    )
)
def test_properties_round_trip(props: dict[str, str]) -> None:
    assert parse_properties(dump_properties(props)) == props


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("cluster.id=x\nnode.id=1\n", "no 'version'"),
        ("version=2\n", "unknown version"),
        ("version=1\ncluster.id=x\n", "needs both"),
        ("version=1\ncluster.id=x\nnode.id=abc\n", "not an int"),
        ("version=1\ncluster.id=x\nnode.id=1\ndirectory.id=short\n", "directory.id"),
    ],
)
def test_meta_properties_bad(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(MetaPropertiesError, match=match) as info:
        read_meta_properties(tmp_path)
    assert "meta.properties" in str(info.value)


def test_meta_properties_missing(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None


# --- quorum-state ------------------------------------------------------------------------

# The two examples of Kafka's FileQuorumStateStore javadoc (reference §4.3).
KAFKA_V1 = (
    '{"leaderId":-1,"leaderEpoch":2,"votedId":1,'
    '"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}'
)
KAFKA_V0 = (
    '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,'
    '"appliedOffset":0,"currentVoters":[],"data_version":0}'
)


def test_quorum_state_kafka_examples() -> None:
    v1 = QuorumStateFile(-1, 2, 1, Uuid.from_string("J8aAPcfLQt2bqs1JT_rMgQ"), 1)
    assert v1.to_json() == KAFKA_V1
    assert QuorumStateFile.from_json(KAFKA_V1) == v1
    v0 = QuorumStateFile(1, 2, -1, Uuid.ZERO, 0)
    assert v0.to_json() == KAFKA_V0
    assert QuorumStateFile.from_json(KAFKA_V0) == v0


def test_quorum_state_file_atomic(tmp_path: Path) -> None:
    assert read_quorum_state(tmp_path) is None
    state = QuorumStateFile(leader_id=1, leader_epoch=1)
    write_quorum_state(tmp_path, state)
    # What a 4.3.1 controller wrote (reference §10).
    assert (tmp_path / "quorum-state").read_text() == (
        '{"leaderId":1,"leaderEpoch":1,"votedId":-1,'
        '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    )
    assert read_quorum_state(tmp_path) == state
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quorum-state"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        "{",
        '{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":2}',
        '{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":1}',
        '{"leaderId":"1","leaderEpoch":2,"votedId":-1,"data_version":0}',
        '{"leaderEpoch":2,"votedId":-1,"data_version":0}',
    ],
)
def test_quorum_state_bad(tmp_path: Path, text: str) -> None:
    (tmp_path / "quorum-state").write_text(text)
    with pytest.raises(QuorumStateError, match="quorum-state"):
        read_quorum_state(tmp_path)


# --- leader-epoch-checkpoint -------------------------------------------------------------


def test_checkpoint_format() -> None:
    entries = [EpochEntry(1, 0), EpochEntry(3, 17)]
    assert format_checkpoint(entries) == "0\n2\n1 0\n3 17\n"
    assert parse_checkpoint("0\n2\n1   0\n3\t17\n") == entries


def test_empty_checkpoint_reads_as_no_entries(tmp_path: Path) -> None:
    """Kafka creates leader-epoch-checkpoint empty before its first write and reads an empty
    file as no entries (CheckpointFile.CheckpointReadBuffer.read, javap-checked on 4.3.1): a
    Kafka controller stopped before it led leaves one, and we must open that directory."""
    assert parse_checkpoint("") == []
    (tmp_path / "leader-epoch-checkpoint").write_text("")
    assert LeaderEpochCache.load(tmp_path).entries == []


@pytest.mark.parametrize(
    "text", ["\n", "1\n0\n", "0\n2\n1 0\n", "0\n1\n1 x\n", "0\n2\n3 0\n1 5\n", "0\nz\n"]
)
def test_checkpoint_bad(tmp_path: Path, text: str) -> None:
    (tmp_path / "leader-epoch-checkpoint").write_text(text)
    with pytest.raises(EpochCheckpointError, match="leader-epoch-checkpoint"):
        LeaderEpochCache.load(tmp_path)


def _naive_end_offset(entries: list[tuple[int, int]], epoch: int, leo: int) -> tuple[int, int]:
    # Oracle from the definition: end of epoch E = start of the first epoch > E (LEO if none
    # above and E is the latest), reported with the largest known epoch <= E.
    if epoch == -1 or not entries:
        return (-1, -1)
    if entries[-1][0] == epoch:
        return (epoch, leo)
    above = [s for e, s in entries if e > epoch]
    if not above:
        return (-1, -1)
    below = [e for e, _ in entries if e <= epoch]
    return (below[-1] if below else epoch, above[0])


@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(0, 100)), max_size=12),
    st.integers(-1, 25),
)
def test_end_offset_for_matches_oracle(assigns: list[tuple[int, int]], epoch: int) -> None:
    cache = LeaderEpochCache(None)
    model: list[tuple[int, int]] = []
    for e, off in assigns:
        cache.assign(e, off)
        if model and model[-1][0] == e and model[-1][1] <= off:
            continue
        model = [m for m in model if m[0] < e and m[1] < off] + [(e, off)]
    assert [(x.epoch, x.start_offset) for x in cache.entries] == model
    leo = max([o for _, o in model], default=0) + 5
    assert cache.end_offset_for(epoch, leo) == _naive_end_offset(model, epoch, leo)
    if model:
        starts = [s for _, s in model]
        i = bisect.bisect_right(starts, leo - 1)
        assert cache.epoch_for_offset(leo - 1) == model[i - 1][0]


def test_epoch_cache_truncation(tmp_path: Path) -> None:
    cache = LeaderEpochCache.load(tmp_path)
    for e, o in [(1, 0), (2, 10), (4, 30)]:
        cache.assign(e, o)
    cache.truncate_from_end(30)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 10)]
    cache.truncate_from_start(15)
    assert cache.entries == [EpochEntry(2, 15)]
    assert LeaderEpochCache.load(tmp_path).entries == [EpochEntry(2, 15)]


@settings(max_examples=150)
@given(st.binary(max_size=120))
def test_fuzz_small_files_give_value_or_protocol_error(data: bytes) -> None:
    import tempfile

    from metaquorum.protocol.errors import ProtocolError

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name, reader in (
            ("meta.properties", lambda: read_meta_properties(d)),
            ("quorum-state", lambda: read_quorum_state(d)),
            ("leader-epoch-checkpoint", lambda: LeaderEpochCache.load(d)),
        ):
            (d / name).write_bytes(data)
            try:
                reader()
            except ProtocolError as e:
                assert name in str(e)

"""Hypothesis strategies for every generated message, derived from our schema definitions.

`strategy_for(message_name, version)` draws instances of Kafka's message `message_name`
("VoteRequest", "FetchResponse", "VotersRecord", ...) whose every field is valid for `version`:
fields the version lacks keep their defaults (so encode/decode round-trips exactly), nullable
fields (arrays of structs included) are sometimes None, tagged fields are sometimes
non-default, and in flexible versions a struct may carry unknown tagged fields (tags that struct
does not know, ascending, raw bytes).
Shared with the conformance tier, which feeds the same values to Kafka's own classes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from metaquorum.protocol.messages import MESSAGES
from metaquorum.protocol.schema import BY_NAME
from metaquorum.protocol.schema.dsl import Field, Message
from metaquorum.protocol.types import RawTaggedField, Uuid

_INTS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1),
}
_INT64 = st.integers(-(2**63), 2**63 - 1)
_UUIDS = st.one_of(st.just(Uuid.ZERO), st.builds(Uuid, _INT64, _INT64))
_TEXT = st.text(max_size=12)


def strategy_for(
    message_name: str,
    version: int,
    *,
    unknown_tags: bool = True,
    max_items: int = 3,
    spec: Message | None = None,
) -> st.SearchStrategy[Any]:
    """Instances of `message_name` valid at `version` (ValueError for an unknown name/version).
    `spec` is the declaration the values follow: ours by default; the conformance tier passes
    Kafka's own (`tests.support.kafka_schemas.message_from_kafka`)."""
    if message_name not in BY_NAME:
        raise ValueError(f"unknown message {message_name!r}")
    msg = spec if spec is not None else BY_NAME[message_name]
    if version not in msg.versions():
        raise ValueError(f"{message_name} has no version {version}")
    cls = MESSAGES[message_name]
    return _Builder(msg, cls, version, unknown_tags, max_items).struct(cls, msg.fields)


class _Builder:
    def __init__(
        self, msg: Message, top: type, version: int, unknown_tags: bool, max_items: int
    ) -> None:
        self.msg, self.top, self.version = msg, top, version
        self.unknown_tags, self.max_items = unknown_tags, max_items

    def struct(self, target: type, fields: tuple[Field, ...]) -> st.SearchStrategy[Any]:
        v = self.version
        kwargs: dict[str, st.SearchStrategy[Any]] = {}
        for fld in fields:
            if v in fld.version_range():
                kwargs[fld.py_name] = self.value(fld)
        if self.msg.is_flexible(v) and self.unknown_tags:
            # Tags the struct knows in any version are never "unknown" (Kafka rejects them).
            known = {fld.tag for fld in fields if fld.tag is not None}
            kwargs["unknown_tagged_fields"] = _unknown(known)
        return st.builds(target, **kwargs)

    def value(self, fld: Field) -> st.SearchStrategy[Any]:
        nullable = self.version in fld.nullable_range()
        if fld.is_array:
            elem = Field(fld.name, fld.element_type, fld.versions, fields=fld.fields)
            base: st.SearchStrategy[Any] = st.lists(self.value(elem), max_size=self.max_items)
        elif fld.is_struct:
            struct_cls = getattr(self.top, fld.element_type)
            base = self.struct(struct_cls, self.msg.struct_fields(fld.element_type))
        elif fld.type in _INTS:
            base = _INTS[fld.type]
            if fld.default is not None:
                base = st.one_of(st.just(fld.default), base)
        elif fld.type == "bool":
            base = st.booleans()
        elif fld.type == "float64":
            base = st.floats(allow_nan=False)
        elif fld.type == "uuid":
            base = _UUIDS
        elif fld.type == "string":
            base = _TEXT
        else:  # bytes, records
            base = st.binary(max_size=24)
        if nullable and (fld.is_array or not fld.is_struct):  # a null array of structs too
            return st.one_of(st.none(), base)
        return base


def all_nulls(message_name: str, version: int, spec: Message) -> Any:
    """An instance of `message_name` at `version` with every field `spec` declares nullable at
    that version set to None, and every array holding one element (so nested nullable fields
    are present too); other fields keep their defaults."""
    cls = MESSAGES[message_name]
    return _null_struct(spec, cls, cls, spec.fields, version)


def _null_struct(spec: Message, top: type, target: type, fields: tuple[Field, ...], v: int) -> Any:
    kwargs: dict[str, Any] = {}
    for fld in fields:
        if v not in fld.version_range():
            continue
        if v in fld.nullable_range():
            kwargs[fld.py_name] = None
        elif fld.type == "records":  # its default is null, which only a nullable one may be
            kwargs[fld.py_name] = b""
        elif fld.is_struct:
            sub = fld.fields or spec.struct_fields(fld.element_type)
            item = _null_struct(spec, top, getattr(top, fld.element_type), sub, v)
            kwargs[fld.py_name] = [item] if fld.is_array else item
    return target(**kwargs)


def _unknown(known: set[int | None]) -> st.SearchStrategy[list[RawTaggedField]]:
    tags = st.integers(0, 200).filter(lambda t: t not in known)
    pairs = st.lists(st.tuples(tags, st.binary(max_size=6)), max_size=2, unique_by=lambda p: p[0])
    return pairs.map(lambda ps: [RawTaggedField(t, d) for t, d in sorted(ps)])


def all_message_versions() -> list[tuple[str, int]]:
    """Every (message name, version) pair our schemas declare."""
    return [(m.name, v) for m in BY_NAME.values() for v in m.versions()]

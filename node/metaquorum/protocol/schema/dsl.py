"""A compact declarative language for Kafka message schemas (our own, not Kafka's JSON files).

Role: each API family module describes its messages with `Message`, `Field` and `Struct`; the
code generator (`metaquorum.protocol.codegen`) and the JSON form (`metaquorum.protocol.json_form`)
read these descriptions. Names are Kafka's PascalCase names; Python attributes are their
snake_case (Kafka's own `toSnakeCase`), JSON keys their camelCase (first letter lower-cased).

Invariants checked on construction:
- version ranges are "N+", "N-M", "N" or "none" and lie inside the message's valid versions;
- a tagged field has a tag, tagged versions inside the flexible versions, and a unique tag per
  struct;
- every struct type name resolves to exactly one set of fields in the message.

KIP-482 (flexible versions, tagged fields) and Kafka's message-definition conventions
(`validVersions`, `flexibleVersions`, `nullableVersions`, `taggedVersions`, `ignorable`, `default`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

PRIMITIVES = (
    "int8", "int16", "int32", "int64", "uint16", "bool", "float64", "uuid", "string", "bytes",
    "records",
)  # fmt: skip

MessageKind = Literal["request", "response", "header", "data"]


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; `highest` None means open-ended ("N+"); empty = "none"."""

    lowest: int
    highest: int | None

    @classmethod
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return NONE
        if m := re.fullmatch(r"(\d+)\+", text):
            return cls(int(m.group(1)), None)
        if m := re.fullmatch(r"(\d+)-(\d+)", text):
            return cls(int(m.group(1)), int(m.group(2)))
        if re.fullmatch(r"\d+", text):
            return cls(int(text), int(text))
        raise ValueError(f"bad version range {text!r} (use N+, N-M, N or none)")

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int) or self.lowest < 0:
            return False
        return version >= self.lowest and (self.highest is None or version <= self.highest)

    def is_empty(self) -> bool:
        return self.lowest < 0

    def __str__(self) -> str:
        if self.is_empty():
            return "none"
        if self.highest is None:
            return f"{self.lowest}+"
        return f"{self.lowest}-{self.highest}"


NONE = Versions(-1, -1)


def snake_case(name: str) -> str:
    """Kafka's `MessageGenerator.toSnakeCase`: '_' before a capital that follows a lower-case."""
    out: list[str] = []
    prev_capital = True
    for ch in name:
        if ch.isupper():
            if not prev_capital:
                out.append("_")
            out.append(ch.lower())
            prev_capital = True
        else:
            out.append(ch)
            prev_capital = False
    return "".join(out)


def camel_case(name: str) -> str:
    """The JSON key Kafka's JsonConverter uses: the field name with its first letter lowered."""
    return name[:1].lower() + name[1:]


@dataclass(frozen=True, slots=True)
class Field:
    """One field. `type` is a primitive name, a struct name, or '[]' + either."""

    name: str
    type: str
    versions: str = "0+"
    nullable: str = "none"
    default: object = None  # None = the type's default (0, "", ZERO, [], false, new struct)
    tag: int | None = None
    tagged: str | None = None  # tagged versions; defaults to `versions` when `tag` is set
    ignorable: bool = False
    flexible: str | None = None  # flexibleVersions override (RequestHeader.ClientId: "none")
    fields: tuple[Field, ...] = ()
    null_default: bool = False  # Kafka "default": "null"
    map_key: bool = False  # Kafka "mapKey": a key of its struct's collection (no wire effect)

    @property
    def py_name(self) -> str:
        return snake_case(self.name)

    @property
    def json_name(self) -> str:
        return camel_case(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    def version_range(self) -> Versions:
        return Versions.parse(self.versions)

    def nullable_range(self) -> Versions:
        return Versions.parse(self.nullable)

    def tagged_range(self) -> Versions:
        if self.tag is None:
            return NONE
        return Versions.parse(self.tagged if self.tagged is not None else self.versions)


def f(name: str, type_: str, versions: str = "0+", *children: Field, **kw: object) -> Field:
    """Shorthand: f("Name", "string", "0+") or f("Topics", "[]TopicData", "0+", f(...), ...)."""
    return Field(name, type_, versions, fields=tuple(children), **kw)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Struct:
    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class Message:
    name: str  # Kafka's message name: "VoteRequest", "LeaderChangeMessage", "QuorumStateData"
    kind: MessageKind
    valid: str
    flexible: str
    fields: tuple[Field, ...]
    api_key: int = -1
    common_structs: tuple[Struct, ...] = ()
    class_name_override: str | None = None
    structs: dict[str, Struct] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        _collect_structs(self.fields, self.structs, {s.name: s for s in self.common_structs})
        for s in self.common_structs:
            self.structs.setdefault(s.name, s)
            _collect_structs(s.fields, self.structs, {})
        self._check(self.fields, self.name)
        for s in self.structs.values():
            self._check(s.fields, f"{self.name}.{s.name}")

    @property
    def class_name(self) -> str:
        if self.class_name_override is not None:
            return self.class_name_override
        return self.name + "Data" if self.kind in ("request", "response", "header") else self.name

    def valid_range(self) -> Versions:
        return Versions.parse(self.valid)

    def flexible_range(self) -> Versions:
        return Versions.parse(self.flexible)

    @property
    def lowest(self) -> int:
        return self.valid_range().lowest

    @property
    def highest(self) -> int:
        h = self.valid_range().highest
        assert h is not None, f"{self.name}: validVersions must be closed"
        return h

    def versions(self) -> range:
        return range(self.lowest, self.highest + 1)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_range()

    def struct_fields(self, type_name: str) -> tuple[Field, ...]:
        return self.structs[type_name].fields

    def _check(self, fields: tuple[Field, ...], where: str) -> None:
        tags: set[int] = set()
        names: set[str] = set()
        for fld in fields:
            if fld.name in names:
                raise ValueError(f"{where}: duplicate field {fld.name}")
            names.add(fld.name)
            fld.version_range()
            fld.nullable_range()
            if fld.tag is not None:
                if fld.tag in tags:
                    raise ValueError(f"{where}: duplicate tag {fld.tag}")
                tags.add(fld.tag)
                tr = fld.tagged_range()
                if tr.lowest not in self.flexible_range():
                    raise ValueError(f"{where}.{fld.name}: tagged versions {tr} not flexible")
            if fld.is_struct and fld.element_type not in self.structs:
                raise ValueError(f"{where}.{fld.name}: unknown struct {fld.element_type}")


def _collect_structs(
    fields: tuple[Field, ...], into: dict[str, Struct], common: dict[str, Struct]
) -> None:
    for fld in fields:
        if not fld.is_struct:
            continue
        name = fld.element_type
        if fld.fields:
            if name in into and into[name].fields != fld.fields:
                raise ValueError(f"struct {name} is defined twice with different fields")
            into[name] = Struct(name, fld.fields)
            _collect_structs(fld.fields, into, common)
        elif name in common:
            into[name] = common[name]

"""Kafka's own message schemas, read from the pinned jars, as an oracle for our declarations.

Role: `load_kafka_schemas(lib)` reads every `common/message/*.json` inside Kafka's jars (the
files Kafka's generator compiled its classes from); `compare_message(ours, kafka)` lists every
difference in the declared properties of each field (order, type, versions, nullableVersions,
taggedVersions and tag, default, ignorable, mapKey, field-level flexibleVersions) and of the
message (validVersions, flexibleVersions, apiKey, type); `message_from_kafka(kafka)` turns
Kafka's JSON into our schema DSL, so test values can be generated from *Kafka's* declarations
rather than from ours (an oracle fed our own declarations can only confirm them).
"""

from __future__ import annotations

import json
import re
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

from metaquorum.protocol.schema.dsl import Field, Message, Struct, Versions

_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_KINDS = {"request": "request", "response": "response", "header": "header", "data": "data"}


@cache
def load_kafka_schemas(lib: Path) -> dict[str, dict[str, Any]]:
    """Kafka message name -> its JSON schema, from every jar in `lib`."""
    out: dict[str, dict[str, Any]] = {}
    for jar in sorted(lib.glob("kafka-*.jar")):
        with zipfile.ZipFile(jar) as z:
            for name in z.namelist():
                if name.startswith("common/message/") and name.endswith(".json"):
                    text = _COMMENT.sub("", z.read(name).decode("utf-8"))
                    schema = json.loads(text)
                    out.setdefault(schema["name"], schema)
    return out


def _range(text: str | None, valid: Versions) -> tuple[int, int] | None:
    """A version range clipped to the message's valid versions (None when empty)."""
    if text is None:
        return None
    r = Versions.parse(text)
    if r.is_empty():
        return None
    hi = valid.highest if r.highest is None else min(r.highest, valid.highest or r.highest)
    lo = max(r.lowest, valid.lowest)
    return None if hi is not None and lo > hi else (lo, -1 if hi is None else hi)


_NULL = object()
NONE_RANGE = Versions(-1, -1)


_TYPE_DEFAULTS: dict[str, object] = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "bool": False,
    "float64": 0.0, "string": "",
}  # fmt: skip


def _kafka_default(fld: dict[str, Any]) -> object:
    """Kafka's declared default, normalised: None when it is the type's own default (Kafka's
    generator uses null for a records field without a default)."""
    d = fld.get("default")
    if d is None:
        return _NULL if fld["type"] == "records" else None
    value = _parse_default(fld, d)
    if value is not _NULL and value == _TYPE_DEFAULTS.get(fld["type"], _NULL):
        return None
    return value


def _parse_default(fld: dict[str, Any], d: object) -> object:
    if d == "null":
        return _NULL
    t = fld["type"]
    if t in ("int8", "int16", "int32", "int64", "uint16"):
        return int(str(d), 0)
    if t == "bool":
        return str(d).lower() == "true"
    if t == "float64":
        return float(d)
    return str(d)


def _our_default(fld: Field) -> object:
    if fld.null_default:
        return _NULL
    if fld.default is not None and fld.default == _TYPE_DEFAULTS.get(fld.type, _NULL):
        return None
    return fld.default


def _struct_fields_kafka(kafka: dict[str, Any], fld: dict[str, Any]) -> list[dict[str, Any]]:
    if "fields" in fld:
        return list(fld["fields"])
    element = fld["type"].removeprefix("[]")
    for s in kafka.get("commonStructs", []):
        if s["name"] == element:
            return list(s["fields"])
    return []


def compare_message(ours: Message, kafka: dict[str, Any]) -> list[str]:
    """Every declared property of `ours` that differs from Kafka's schema, one line each."""
    diffs: list[str] = []
    name = ours.name
    if ours.valid != kafka["validVersions"] and Versions.parse(ours.valid) != Versions.parse(
        kafka["validVersions"]
    ):
        diffs.append(f"{name}: validVersions {ours.valid} != Kafka {kafka['validVersions']}")
    valid = Versions.parse(kafka["validVersions"])
    if _range(ours.flexible, valid) != _range(kafka.get("flexibleVersions", "none"), valid):
        diffs.append(
            f"{name}: flexibleVersions {ours.flexible} != Kafka {kafka['flexibleVersions']}"
        )
    if kafka.get("apiKey", -1) != ours.api_key:
        diffs.append(f"{name}: apiKey {ours.api_key} != Kafka {kafka.get('apiKey')}")
    if _KINDS.get(kafka["type"]) != ours.kind:
        diffs.append(f"{name}: type {ours.kind} != Kafka {kafka['type']}")
    _compare_fields(ours, kafka, list(ours.fields), list(kafka["fields"]), name, valid, diffs)
    return diffs


def _compare_fields(
    ours: Message,
    kafka: dict[str, Any],
    mine: list[Field],
    theirs: list[dict[str, Any]],
    where: str,
    valid: Versions,
    diffs: list[str],
) -> None:
    names_mine = [f.name for f in mine]
    names_theirs = [f["name"] for f in theirs]
    if names_mine != names_theirs:
        diffs.append(f"{where}: fields {names_mine} != Kafka {names_theirs}")
    by_name = {f["name"]: f for f in theirs}
    for fld in mine:
        k = by_name.get(fld.name)
        if k is None:
            continue
        at = f"{where}.{fld.name}"

        def differ(prop: str, a: object, b: object, at: str = at) -> None:
            if a != b:
                shown_a = "null" if a is _NULL else a
                shown_b = "null" if b is _NULL else b
                diffs.append(f"{at}: {prop} ours {shown_a!r} != Kafka {shown_b!r}")

        differ("type", fld.type, k["type"])
        differ("versions", _range(fld.versions, valid), _range(k["versions"], valid))
        differ(
            "nullableVersions",
            _range(fld.nullable, valid),
            _range(k.get("nullableVersions", "none"), valid),
        )
        tagged_k = k.get("taggedVersions") if "tag" in k else None
        tagged_o = (fld.tagged or fld.versions) if fld.tag is not None else None
        differ("tag", fld.tag, k.get("tag"))
        differ("taggedVersions", _range(tagged_o, valid), _range(tagged_k, valid))
        differ("ignorable", fld.ignorable, bool(k.get("ignorable", False)))
        differ("mapKey", fld.map_key, bool(k.get("mapKey", False)))
        differ("default", _our_default(fld), _kafka_default(k))
        differ("flexibleVersions", fld.flexible, k.get("flexibleVersions"))
        if fld.is_struct:
            sub_mine = list(fld.fields) or list(ours.struct_fields(fld.element_type))
            sub_theirs = _struct_fields_kafka(kafka, k)
            # A struct exists only in its field's versions: Kafka's generator reads a nested
            # "0+" under a "2+" field as "2+" (no version check is emitted), so compare there.
            inner = _range(k["versions"], valid)
            scope = NONE_RANGE if inner is None else Versions(inner[0], valid.highest)
            _compare_fields(ours, kafka, sub_mine, sub_theirs, at, scope, diffs)


def _field_from_kafka(k: dict[str, Any]) -> Field:
    default: object = None
    null_default = False
    d = _kafka_default(k) if k["type"] != "records" else None
    if d is _NULL:
        null_default = True
    elif d is not None:
        default = d
    return Field(
        k["name"],
        k["type"],
        k["versions"],
        nullable=k.get("nullableVersions", "none"),
        default=default,
        tag=k.get("tag"),
        tagged=k.get("taggedVersions"),
        ignorable=bool(k.get("ignorable", False)),
        flexible=k.get("flexibleVersions"),
        fields=tuple(_field_from_kafka(c) for c in k.get("fields", [])),
        null_default=null_default,
        map_key=bool(k.get("mapKey", False)),
    )


def message_from_kafka(kafka: dict[str, Any]) -> Message:
    """Kafka's declaration of a message in our DSL (for generating values from it)."""
    return Message(
        kafka["name"],
        _KINDS[kafka["type"]],  # type: ignore[arg-type]
        kafka["validVersions"],
        kafka.get("flexibleVersions", "none"),
        tuple(_field_from_kafka(k) for k in kafka["fields"]),
        api_key=kafka.get("apiKey", -1),
        common_structs=tuple(
            Struct(s["name"], tuple(_field_from_kafka(k) for k in s["fields"]))
            for s in kafka.get("commonStructs", [])
        ),
    )

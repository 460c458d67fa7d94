"""Render our schema definitions in the shape `kafka/SchemaDump.java` prints for Kafka's classes.

SchemaDump walks Kafka's generated `SCHEMAS` (field names in snake_case, Kafka's type names,
tagged sections) by reflection; `view(message)` builds the same structure from our DSL, so a
conformance test can compare the two for every message and version.
"""

from __future__ import annotations

from typing import Any

from metaquorum.protocol.schema.dsl import Field, Message

_FIXED = {
    "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "uint16": "UINT16",
    "bool": "BOOLEAN", "float64": "FLOAT64", "uuid": "UUID",
}  # fmt: skip


def _type(msg: Message, fld: Field, version: int, flexible: bool) -> dict[str, Any]:
    nullable = version in fld.nullable_range()
    compact = flexible and fld.flexible != "none"
    if fld.is_array:
        elem = Field(fld.name, fld.element_type, fld.versions, fields=fld.fields)
        return {
            "kind": "COMPACT_ARRAY" if compact else "ARRAY",
            "nullable": nullable,
            "elem": _type(msg, elem, version, flexible),
        }
    if fld.is_struct:
        return {
            "kind": "STRUCT",
            "name": fld.element_type,
            "fields": _fields(msg, msg.struct_fields(fld.element_type), version, flexible),
        }
    if fld.type in _FIXED:
        return {"kind": _FIXED[fld.type], "nullable": False}
    base = {"string": "STRING", "bytes": "BYTES", "records": "RECORDS"}[fld.type]
    kind = ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "") + base
    return {"kind": kind, "nullable": nullable}


def _fields(
    msg: Message, fields: tuple[Field, ...], version: int, flexible: bool
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    tagged: dict[str, Any] = {}
    for fld in fields:
        if version not in fld.version_range():
            continue
        if version in fld.tagged_range():
            tagged[str(fld.tag)] = {"name": fld.py_name, "type": _type(msg, fld, version, flexible)}
            continue
        out.append({"name": fld.py_name, "type": _type(msg, fld, version, flexible)})
    if flexible:
        out.append(
            {
                "name": "_tagged_fields",
                "tagged": dict(sorted(tagged.items(), key=lambda kv: int(kv[0]))),
            }
        )
    return out


def view(msg: Message) -> dict[str, Any]:
    return {
        "lowest": msg.lowest,
        "highest": msg.highest,
        "schemas": {
            str(v): _fields(msg, msg.fields, v, msg.is_flexible(v)) for v in msg.versions()
        },
    }

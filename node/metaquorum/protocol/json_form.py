"""Kafka's JSON form of a message, as its generated `<Name>JsonConverter` writes and reads it.

Role: `to_json(message, version)` / `from_json(cls, obj, version)` and `dumps(obj)` (compact
text as Jackson's `JsonNode.toString()` prints it), driven by our schema definitions.

Rules (Kafka 4.3.1 `JsonConverterGenerator`):
- keys are the schema's field names with the first letter lower-cased, in declaration order;
- only fields present in the version are written; a tagged field only when non-default;
- numbers (int64 included) are JSON numbers, bools are bools, Uuids are Kafka's base64 text,
  bytes are standard base64, `records` are written as "" (null when null), unknown tagged fields
  are omitted;
- null is read where the field is nullable in the version, arrays of structs included;
- reading: a non-tagged field of the version that is missing is an error ("mandatory"); a
  field present in the JSON is read even if the version lacks it (writing it then follows the
  ignorable rule); keys the message does not have are ignored (unless `strict`); values out of
  their type's range are refused.
Every bad input raises ProtocolError naming the JSON path.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.schema import BY_NAME
from metaquorum.protocol.schema.dsl import Field, Message
from metaquorum.protocol.types import Uuid

_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}


def _spec(cls: type) -> Message:
    name = getattr(cls, "NAME", None)
    if not isinstance(name, str) or name not in BY_NAME:
        raise ProtocolError(f"{cls.__name__} is not a generated Kafka message class")
    return BY_NAME[name]


def _is_default(msg: Message, top: type, fld: Field, value: Any) -> bool:
    if fld.is_array or fld.type == "bytes":
        return not value
    if fld.is_struct:
        return bool(value == getattr(top, fld.element_type)())
    if fld.null_default or fld.type == "records":
        return value is None
    if fld.type == "string":
        return bool(value == (fld.default if fld.default is not None else ""))
    if fld.type == "uuid":
        return bool(value == Uuid.ZERO)
    if fld.type == "bool":
        return bool(value) == bool(fld.default)
    return bool(value == (fld.default if fld.default is not None else 0))


def to_json(message: Any, version: int) -> dict[str, Any]:
    """The JSON object Kafka's JsonConverter writes for `message` at `version`."""
    msg = _spec(type(message))
    if version not in msg.versions():
        raise ProtocolError(
            f"unsupported version {version} of {msg.name} ({msg.lowest}-{msg.highest})"
        )
    return _struct_to_json(msg, type(message), msg.fields, message, version)


def _struct_to_json(
    msg: Message, top: type, fields: tuple[Field, ...], value: Any, version: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fld in fields:
        if version not in fld.version_range():
            continue
        v = getattr(value, fld.py_name)
        if version in fld.tagged_range() and _is_default(msg, top, fld, v):
            continue
        out[fld.json_name] = _value_to_json(msg, top, fld, v, version)
    return out


def _value_to_json(msg: Message, top: type, fld: Field, value: Any, version: int) -> Any:
    if fld.is_array:
        if value is None:
            return None
        elem = Field(fld.name, fld.element_type, fld.versions)
        return [_value_to_json(msg, top, elem, e, version) for e in value]
    if fld.is_struct:
        return _struct_to_json(msg, top, msg.struct_fields(fld.element_type), value, version)
    if fld.type == "records":
        return None if value is None and version in fld.nullable_range() else ""
    if value is None:
        return None
    if fld.type == "uuid":
        return str(value)
    if fld.type == "bytes":
        return base64.b64encode(value).decode("ascii")
    return value


def from_json(cls: type, obj: Any, version: int, *, strict: bool = False) -> Any:
    """Build a `cls` instance from Kafka's JSON form at `version` (ProtocolError if invalid).

    Like Kafka's converter, keys the message does not have are ignored (a `quorum-state` file's
    `data_version`, say); `strict=True` refuses them instead.
    """
    msg = _spec(cls)
    if version not in msg.versions():
        raise ProtocolError(
            f"unsupported version {version} of {msg.name} ({msg.lowest}-{msg.highest})"
        )
    return _struct_from_json(
        msg, cls, cls, fields=msg.fields, obj=obj, version=version, path=msg.name, strict=strict
    )


def _struct_from_json(
    msg: Message,
    top: type,
    target: type,
    *,
    fields: tuple[Field, ...],
    obj: Any,
    version: int,
    path: str,
    strict: bool,
) -> Any:
    if not isinstance(obj, dict):
        raise ProtocolError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    if strict:
        extra = sorted(set(obj) - {fld.json_name for fld in fields})
        if extra:
            raise ProtocolError(f"{path}: unknown field(s) {', '.join(extra)}")
    kwargs: dict[str, Any] = {}
    for fld in fields:
        where = f"{path}.{fld.json_name}"
        if fld.json_name not in obj:
            in_version = version in fld.version_range()
            if in_version and version not in fld.tagged_range():
                raise ProtocolError(f"{where}: missing, and it is mandatory in version {version}")
            continue
        node = obj[fld.json_name]
        kwargs[fld.py_name] = _value_from_json(
            msg, top, fld, node, version=version, where=where, strict=strict
        )
    try:
        return target(**kwargs)
    except TypeError as exc:  # pragma: no cover - schema and classes are generated together
        raise ProtocolError(f"{path}: {exc}") from None


def _value_from_json(
    msg: Message, top: type, fld: Field, node: Any, *, version: int, where: str, strict: bool
) -> Any:
    if node is None:
        # A nullable array (of structs too: FetchResponse AbortedTransactions, QuorumStateData
        # CurrentVoters) reads null as None. A single struct is never null: Kafka 4.3.1 declares
        # no nullable struct in the messages we speak, and our codec has no null marker for one.
        if version in fld.nullable_range() and (fld.is_array or not fld.is_struct):
            return None
        raise ProtocolError(f"{where}: null is not allowed here (version {version})")
    if fld.is_array:
        if not isinstance(node, list):
            raise ProtocolError(f"{where}: expected a JSON array")
        elem = Field(fld.name, fld.element_type, fld.versions, fields=fld.fields)
        return [
            _value_from_json(
                msg, top, elem, e, version=version, where=f"{where}[{i}]", strict=strict
            )
            for i, e in enumerate(node)
        ]
    if fld.is_struct:
        struct_cls = getattr(top, fld.element_type)
        fields = msg.struct_fields(fld.element_type)
        return _struct_from_json(
            msg,
            top,
            struct_cls,
            fields=fields,
            obj=node,
            version=version,
            path=where,
            strict=strict,
        )
    t = fld.type
    if t in _RANGES:
        if isinstance(node, bool) or not isinstance(node, int):
            raise ProtocolError(f"{where}: expected an integer ({t}), got {node!r}")
        lo, hi = _RANGES[t]
        if not lo <= node <= hi:
            raise ProtocolError(f"{where}: {node} is out of range for {t} ({lo}..{hi})")
        return node
    if t == "bool":
        if not isinstance(node, bool):
            raise ProtocolError(f"{where}: expected true or false, got {node!r}")
        return node
    if t == "float64":
        if isinstance(node, bool) or not isinstance(node, int | float):
            raise ProtocolError(f"{where}: expected a number, got {node!r}")
        return float(node)
    if not isinstance(node, str):
        raise ProtocolError(f"{where}: expected a string, got {node!r}")
    if t == "uuid":
        return Uuid.from_string(node)
    if t in ("bytes", "records"):
        try:
            return base64.b64decode(node, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError(f"{where}: not valid base64") from None
    return node


_LOWER_HEX_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-f]{4})")


def dumps(obj: Any) -> str:
    """Compact JSON text the way Jackson's `JsonNode.toString()` prints it."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return _LOWER_HEX_ESCAPE.sub(lambda m: m.group(1) + "\\u" + m.group(2).upper(), text)

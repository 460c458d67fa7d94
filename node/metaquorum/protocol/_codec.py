"""Run-time helpers shared by the generated message codecs (`protocol/messages/*.py`).

Role: the few operations that are the same for every struct: writing a tagged-fields section
(KIP-482) from the known fields that differ from their defaults plus the unknown fields kept
from a parse, and turning a tagged field's size mismatch into a `ProtocolError`.

Invariants: tagged fields go out in ascending tag order with unknown fields merged in by tag
(Kafka's `RawTaggedFieldWriter`); a known and an unknown field with the same tag is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol, Self, TypeVar, dataclass_transform

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.types import Buffer, ByteReader, RawTaggedField, write_unsigned_varint

_T = TypeVar("_T")

if TYPE_CHECKING:

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def struct(cls: type[_T]) -> type[_T]:
        """A generated message or struct class: a frozen slotted dataclass to the type checker."""
        ...

else:

    def struct(cls):
        """At run time a slotted dataclass that is not frozen: a frozen dataclass's `__init__`
        sets each field through `object.__setattr__`, 3.4x slower to build (7 fields: 1.47 vs
        0.43 us), and the codecs build a dozen per request (docs/performance.md, round 3). mypy
        still sees them frozen (PEP 681 `frozen_default`), so our code cannot assign a field;
        none is hashable either way (every struct holds a list of unknown tagged fields)."""
        return dataclass(cls, slots=True)


def write_tagged(
    out: bytearray, known: Sequence[tuple[int, bytes]], unknown: Sequence[RawTaggedField]
) -> None:
    """Append a tagged-fields section: count, then (tag, size, bytes) in ascending tag order."""
    if not unknown:
        # Values below 0x80 are one varint byte: appended without a call (the usual case).
        if len(known) < 0x80:
            out.append(len(known))
        else:
            write_unsigned_varint(out, len(known))
        for tag, data in known:
            if tag < 0x80 and len(data) < 0x80:
                out.append(tag)
                out.append(len(data))
            else:
                write_unsigned_varint(out, tag)
                write_unsigned_varint(out, len(data))
            out += data
        return
    merged: list[tuple[int, bytes]] = list(known)
    known_tags = {tag for tag, _ in known}
    prev = -1
    for raw in unknown:
        if raw.tag in known_tags:
            raise ProtocolError(f"unknown tagged field {raw.tag} clashes with a known tag")
        if raw.tag <= prev:
            raise ProtocolError("unknown tagged fields must be in strictly ascending tag order")
        prev = raw.tag
        merged.append((raw.tag, raw.data))
    merged.sort(key=lambda item: item[0])
    write_unsigned_varint(out, len(merged))
    for tag, data in merged:
        write_unsigned_varint(out, tag)
        write_unsigned_varint(out, len(data))
        out += data


def tagged_size_mismatch(name: str, tag: int, expected_end: int, pos: int) -> ProtocolError:
    return ProtocolError(
        f"tagged field {name} (tag {tag}) declared {expected_end - pos:+d} bytes more than it used"
    )


def unsupported_version(name: str, version: int, lowest: int, highest: int) -> ProtocolError:
    return ProtocolError(
        f"unsupported version {version} of {name} (Kafka 4.3.1 supports {lowest}-{highest})"
    )


def non_default(field: str, version: int) -> ProtocolError:
    """Kafka's UnsupportedVersionException for a non-ignorable field the version cannot carry."""
    return ProtocolError(f"Attempted to write a non-default {field} at version {version}")


def tags_unsupported(name: str, version: int) -> ProtocolError:
    return ProtocolError(
        f"Tagged fields were set, but version {version} of {name} does not support them"
    )


def null_in_non_nullable(field: str, version: int) -> ProtocolError:
    return ProtocolError(f"non-nullable field {field} was null (version {version})")


def unknown_tags_out_of_order(prev: int, tag: int) -> ProtocolError:
    return ProtocolError(f"unknown tagged fields out of order: tag {tag} after tag {prev}")


def invalid_tag(tag: int, version: int) -> ProtocolError:
    """A tag the struct knows only in other versions (Kafka: "Tag N is not valid for version")."""
    return ProtocolError(f"Tag {tag} is not valid for version {version}")


class KafkaMessage(Protocol):
    """What every generated message class offers (for code that handles any message)."""

    API_KEY: ClassVar[int]
    NAME: ClassVar[str]
    LOWEST_SUPPORTED_VERSION: ClassVar[int]
    HIGHEST_SUPPORTED_VERSION: ClassVar[int]

    def encode(self, version: int) -> bytes: ...

    def write(self, out: bytearray, version: int) -> None: ...

    @classmethod
    def decode(cls, data: Buffer, version: int) -> Self: ...

    @classmethod
    def read(cls, r: ByteReader, version: int) -> Self: ...

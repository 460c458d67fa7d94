"""`@value`: the core's value classes (states, events, effects, voter sets): frozen to the type
checker, plain slotted dataclasses at run time.

Role: a frozen dataclass's `__init__` sets every field through `object.__setattr__`, 3.4x slower
than a plain one (7 fields: 1.47 vs 0.43 us), and the core builds several per step (an event, its
effects, a `replace`d state). mypy sees `@value` classes as frozen (PEP 681 `frozen_default`), so
no code of ours can assign a field; at run time they keep a frozen dataclass's `__eq__` and
field-tuple `__hash__` (`unsafe_hash=True`), so they stay usable as dict keys and set members.

Invariant: treat every `@value` instance as immutable; derive a changed one with
`dataclasses.replace`. docs/performance.md, round 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, dataclass_transform

_T = TypeVar("_T")

if TYPE_CHECKING:

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def value(cls: type[_T]) -> type[_T]:
        """A frozen slotted dataclass, to the type checker."""
        ...

else:

    def value(cls):
        return dataclass(cls, slots=True, unsafe_hash=True)

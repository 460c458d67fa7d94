"""`@value`: the core's value classes (states, events, effects, voter sets): frozen to the type
checker, plain slotted dataclasses at run time.

Role: a frozen dataclass's `__init__` sets every field through `object.__setattr__`, 3.4x slower
than a plain one (7 fields: 1.47 vs 0.43 us), and the core builds several per step (an event, its
effects, a `replace`d state). mypy sees `@value` classes as frozen (PEP 681 `frozen_default`), so
no code of ours can assign a field; at run time they keep a frozen dataclass's `__eq__` and
field-tuple `__hash__` (`unsafe_hash=True`), so they stay usable as dict keys and set members.

Invariant: treat every `@value` instance as immutable; derive a changed one with this module's
`replace` (to mypy, `dataclasses.replace` itself; at run time one compiled function per class,
about 3x faster: the core replaces a state or two per step). docs/performance.md, rounds 3-4.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform

__all__ = ["replace", "value"]

_T = TypeVar("_T")

if TYPE_CHECKING:

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def value(cls: type[_T]) -> type[_T]:
        """A frozen slotted dataclass, to the type checker."""
        ...

else:

    def value(cls):
        return dataclass(cls, slots=True, unsafe_hash=True)


# `replace`: `dataclasses.replace` rebuilds a class's field list on every call (`fields()`, a
# check per field, then `__init__` by keywords). Here each class gets one function, compiled on
# first use as dataclasses compiles `__init__`: a keyword per init field, the missing ones copied
# from the old value, all passed to the class in order (so `__post_init__` runs). An unknown or
# `init=False` field is a TypeError (dataclasses: TypeError / ValueError); mypy rejects both
# before, checking every call against `dataclasses.replace` (the TYPE_CHECKING import).
if TYPE_CHECKING:
    from dataclasses import replace
else:
    _MISSING = object()
    _REPLACERS: dict[type, Callable[..., Any]] = {}

    def _replacer(cls):
        names = [f.name for f in fields(cls) if f.init]
        params = "".join(f", {n}=_M" for n in names)
        args = ", ".join(f"obj.{n} if {n} is _M else {n}" for n in names)
        scope = {"_M": _MISSING, "_cls": cls}
        exec(f"def replace(obj, /{params}):\n    return _cls({args})\n", scope)
        fn = _REPLACERS[cls] = scope["replace"]
        return fn

    def replace(obj, /, **changes):
        fn = _REPLACERS.get(obj.__class__)
        if fn is None:
            fn = _replacer(obj.__class__)
        return fn(obj, **changes)

"""The compiled build's transform of the generated message modules (`protocol/messages/*.py`),
so that mypyc compiles their classes natively (issue 28, docs/performance.md round 11).

Role: scripts/build_compiled.py applies `transform(text)` to its COPY of each generated module;
the sources (and so the pure-Python package, the reference) are untouched.

Why: a generated message is `@_codec.struct` (a slotted dataclass at run time) with its structs
nested as classes in it (`FetchRequestData.FetchTopic`), as Kafka's generated Java is. mypyc
rejects a class in a class body, and a dataclass's `__init__` is exec'd at run time, so both
stayed interpreted: ~50k interpreted `__init__`s per 27k simulated events, and about 15% of a
committed write under cProfile (rounds 5 and 8).

What the copy becomes, per module:
- each nested struct `Outer.Inner` is hoisted to a top-level class `Outer_Inner` placed before
  `Outer`, and every `Outer.Inner` in the module is rewritten to `Outer_Inner` (the codecs then
  call the native constructor directly);
- `Outer`'s body keeps the name for the type checker, as `Inner: TypeAlias = Outer_Inner`, so
  code elsewhere that writes `FetchRequestData.FetchTopic` still type-checks under mypyc; after
  the class, `_mypyc_nest` makes the name real at run time (`setattr`; mypyc compiles the alias
  away) and sets `Inner.__qualname__` to `Outer.Inner`;
- `@_codec.struct` becomes a plain `@dataclass` with `__init__`, `__eq__` and `__repr__` written
  out as `dataclasses` would write them (a `field(default_factory=F)` parameter defaults to a
  sentinel, and the body calls F when it was not given: None may be a value; read_fields and
  write_methods, shared with build_compiled's `@value` classes). A field this cannot write (a
  `field(...)` with other arguments than FIELD_KEYWORDS) stops the build: the dataclass's own
  `__init__` would take the aliases as fields. Structs stay unhashable, as in the pure build
  (eq without frozen).
  After each class, `_mypyc_fields` sets the dataclass's fields (and `__match_args__`) to the
  struct's: mypyc hands `dataclasses` the class variables (API_KEY, ...) and the aliases as
  annotations, so `fields()`, `replace()` and `astuple()` would see them too.

Invariants: only `@_codec.struct` classes change; the generated codecs' logic is untouched. The
compiled tier checks the result: the unit tier (round trips, goldens against Kafka's bytes) runs
on the compiled build, and tests/unit/compiled_build/test_compiled_structs.py compares the
written methods with the dataclass ones on real generated modules.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

STRUCT = "_codec.struct"
DECORATOR = "@_mypyc_dataclass"
IMPORTS = (
    "from dataclasses import dataclass as _mypyc_dataclass\n"
    "from typing import Any as _MypycAny, TypeAlias as _MypycTypeAlias\n"
)
UNSET = "_MYPYC_UNSET"
UNSET_DEF = f"{UNSET}: _MypycAny = object()  # a default_factory field was not given\n"
STRUCT_METHODS = {"__init__", "__eq__", "__repr__"}
HELPERS = (
    "\n"
    + UNSET_DEF
    + '''

def _mypyc_nest(outer: _MypycAny, name: str, inner: _MypycAny) -> None:
    """`outer.name` is `inner` at run time, as the pure build's nested class is."""
    setattr(outer, name, inner)
    inner.__qualname__ = outer.__qualname__ + "." + name


def _mypyc_fields(cls: _MypycAny, names: tuple[str, ...]) -> None:
    """The dataclass's fields are the struct's: mypyc hands `dataclasses` its class variables
    and type aliases as annotations too."""
    every = cls.__dataclass_fields__
    setattr(cls, "__dataclass_fields__", {n: every[n] for n in names})
    setattr(cls, "__match_args__", names)
'''
)


def _is_struct(node: ast.stmt) -> bool:
    return isinstance(node, ast.ClassDef) and any(
        ast.unparse(d) == STRUCT for d in node.decorator_list
    )


def _segment(lines: list[str], node: ast.stmt) -> list[str]:
    """The node's source lines, decorators included."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return lines[first - 1 : node.end_lineno]


def hoist(text: str) -> str:
    """Nested struct classes moved to the top level as `Outer_Inner` (see the module doc)."""
    tree = ast.parse(text)
    lines = text.split("\n")
    edits: list[tuple[int, int, list[str]]] = []  # (first line index, count, replacement)
    pairs: list[tuple[str, str]] = []
    for outer in tree.body:
        if not _is_struct(outer):
            continue
        assert isinstance(outer, ast.ClassDef)
        nested = [n for n in outer.body if _is_struct(n)]
        if not nested:
            continue
        hoisted: list[str] = []
        for inner in nested:
            assert isinstance(inner, ast.ClassDef)
            if any(_is_struct(n) for n in inner.body):
                raise SystemExit(f"compiled_structs: {outer.name}.{inner.name} nests a struct")
            pairs.append((outer.name, inner.name))
            seg = [ln[4:] if ln.startswith("    ") else ln for ln in _segment(lines, inner)]
            seg = [re.sub(rf"^class {inner.name}\b", f"class {outer.name}_{inner.name}", ln)
                   for ln in seg]  # fmt: skip
            hoisted += [*seg, "", ""]
            first = min([inner.lineno, *(d.lineno for d in inner.decorator_list)]) - 1
            alias = (
                f"    {inner.name}: _MypycTypeAlias = {outer.name}_{inner.name}"
                "  # type: ignore[misc]"
            )
            edits.append((first, (inner.end_lineno or inner.lineno) - first, [alias]))
        start = min([outer.lineno, *(d.lineno for d in outer.decorator_list)]) - 1
        nest = [f'_mypyc_nest({outer.name}, "{i.name}", {outer.name}_{i.name})' for i in nested]
        edits.append(((outer.end_lineno or outer.lineno), 0, ["", *nest]))
        edits.append((start, 0, hoisted))
    for first, n, new in sorted(edits, key=lambda e: (e[0], -e[1]), reverse=True):
        lines[first : first + n] = new
    out = "\n".join(lines)
    for o, i in pairs:
        out = re.sub(rf"\b{o}\.{i}\b", f"{o}_{i}", out)
    return out


class Field(NamedTuple):
    name: str
    ann: str
    default: str | None  # source of the default value
    factory: str | None  # source of the default factory
    compare: bool  # in __eq__ (and __hash__)


# A `field(...)` is written out when it sets only these (`repr` stays the dataclass's own where
# no __repr__ is written); anything else (`init=False`, `hash=`, ...) is left to dataclasses.
FIELD_KEYWORDS = {"default", "default_factory", "compare", "repr"}


def read_fields(
    cls: ast.ClassDef, text: str, *, methods: set[str], skip_class_vars: bool
) -> list[Field] | None:
    """The class's dataclass fields; None when it defines one of `methods`, has a field this
    cannot write, or (unless `skip_class_vars`: then they are not fields) a ClassVar/InitVar.
    Shared by the generated structs (here) and the core's `@value` classes (build_compiled)."""
    out: list[Field] = []
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name in methods:
            return None
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        ann = ast.get_source_segment(text, node.annotation) or ""
        if any(k in ann for k in ("ClassVar", "InitVar", "TypeAlias")):
            if skip_class_vars:
                continue
            return None
        name, value = node.target.id, node.value
        if value is None:
            out.append(Field(name, ann, None, None, True))
        elif not isinstance(value, ast.Call):
            out.append(Field(name, ann, ast.get_source_segment(text, value), None, True))
        else:
            kw = {k.arg: k.value for k in value.keywords}
            if ast.unparse(value.func) != "field" or value.args or set(kw) - FIELD_KEYWORDS:
                return None  # a call evaluated once, or a field dataclasses must handle
            if "default" in kw and "default_factory" in kw:
                return None
            compare = kw.get("compare")
            if compare is not None and not isinstance(compare, ast.Constant):
                return None
            src = {k: ast.get_source_segment(text, v) for k, v in kw.items()}
            keep = compare is None or bool(compare.value)
            out.append(Field(name, ann, src.get("default"), src.get("default_factory"), keep))
    return out


def write_methods(
    cls: ast.ClassDef, fields: list[Field], pad: str, *, with_hash: bool, with_repr: bool
) -> str:
    """`__init__` (fields in order, their defaults, a sentinel for a factory: None may be a
    value; then `__post_init__` if defined), `__eq__` (same class, equal compared fields, else
    NotImplemented) and, as asked, `__hash__` (the compared fields') and `__repr__`
    (dataclasses' form), as `dataclasses` writes them."""
    params, body = [], []
    for f in fields:
        if f.factory is not None:
            params.append(f", {f.name}: _MypycAny = {UNSET}")
            new = "[]" if f.factory == "list" else f"{f.factory}()"
            body.append(f"{pad}    self.{f.name} = {new} if {f.name} is {UNSET} else {f.name}")
        else:
            default = f" = {f.default}" if f.default is not None else ""
            params.append(f", {f.name}: {f.ann}{default}")
            body.append(f"{pad}    self.{f.name} = {f.name}")
    if any(isinstance(s, ast.FunctionDef) and s.name == "__post_init__" for s in cls.body):
        body.append(f"{pad}    self.__post_init__()")
    compared = [f.name for f in fields if f.compare]
    mine = "".join(f"self.{n}, " for n in compared)
    theirs = "".join(f"other.{n}, " for n in compared)
    lines = [
        f"{pad}def __init__(self{''.join(params)}) -> None:",
        *(body or [f"{pad}    pass"]),
        "",
        f"{pad}def __eq__(self, other: object) -> bool:",
        f"{pad}    if not isinstance(other, {cls.name}) or other.__class__ is not self.__class__:",
        f"{pad}        return NotImplemented",
        f"{pad}    return ({mine}) == ({theirs})",
        "",
    ]
    if with_hash:
        lines += [f"{pad}def __hash__(self) -> int:", f"{pad}    return hash(({mine}))", ""]
    if with_repr:
        shown = ", ".join(f"{f.name}={{self.{f.name}!r}}" for f in fields)
        lines += [
            f"{pad}def __repr__(self) -> str:",
            f'{pad}    return f"{{self.__class__.__qualname__}}({shown})"',
            "",
        ]
    return "\n".join(lines)


def add_methods(text: str) -> str:
    """Each `@_codec.struct` class made `@_mypyc_dataclass`, with its methods written out."""
    tree = ast.parse(text)
    lines = text.split("\n")
    edits: list[tuple[int, int, list[str]]] = []
    for cls in (n for n in tree.body if _is_struct(n)):
        assert isinstance(cls, ast.ClassDef)
        deco = next(d for d in cls.decorator_list if ast.unparse(d) == STRUCT)
        fields = read_fields(cls, text, methods=STRUCT_METHODS, skip_class_vars=True)
        if fields is None:  # its type aliases would become dataclass fields: never half-done
            raise SystemExit(f"compiled_structs: cannot write the methods of {cls.name}")
        pad = " " * cls.body[0].col_offset
        names = "".join(f'"{f.name}", ' for f in fields)
        fix = f"_mypyc_fields({cls.name}, ({names}))"
        written = write_methods(cls, fields, pad, with_hash=False, with_repr=True)
        edits.append((cls.end_lineno or cls.lineno, 0, ["", written, fix]))
        edits.append((deco.lineno - 1, 1, [DECORATOR]))
    for first, n, new in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[first : first + n] = new
    return "\n".join(lines)


def transform(text: str) -> str:
    """A generated message module's text as the compiled build compiles it."""
    head = "from __future__ import annotations\n"
    if STRUCT not in text:
        return text
    if head not in text:
        raise SystemExit("compiled_structs: a message module lacks `from __future__ import`")
    text = add_methods(hoist(text))
    return text.replace(head, head + "\n" + IMPORTS + HELPERS, 1)


CODEC_STRUCT = re.compile(
    r"^if TYPE_CHECKING:\n\n    @dataclass_transform.*?\n\nelse:\n\n    def struct\(cls\):"
    r".*?return dataclass\(cls, slots=True\)\n",
    re.S | re.M,
)
CODEC_PLAIN = (
    "def struct(cls: type[_T]) -> type[_T]:\n"
    '    """The compiled build\'s copy: the pure build\'s run-time `struct` (no message module\n'
    '    of this copy calls it: compiled_structs.transform rewrote them)."""\n'
    "    return dataclass(cls, slots=True)\n"
)


def transform_codec(text: str) -> str:
    """`protocol/_codec.py` for mypyc: its `struct` is split on TYPE_CHECKING (frozen to mypy, a
    plain slotted dataclass at run time), and mypyc compiles only the TYPE_CHECKING side, whose
    body is `...`; the copy keeps the run-time one."""
    out, n = CODEC_STRUCT.subn(CODEC_PLAIN, text)
    if n != 1:
        raise SystemExit("compiled_structs: protocol/_codec.py's `struct` is not where expected")
    return out

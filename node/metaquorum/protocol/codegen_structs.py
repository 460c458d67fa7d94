"""Emit the Python source of one message: its dataclasses and its per-version codec functions.

Role: used by `codegen.py`. For a `Message` it writes the top-level dataclass (with nested struct
dataclasses), module-level default instances of struct-typed fields, one writer and one reader
function per (struct, version) — identical bodies are shared — and the version tables the
class methods dispatch on.

Invariants of the emitted code: every read goes through `ByteReader` (bounds-checked, raises
ProtocolError); tagged fields are written only when non-default, ascending by tag, merged with
the unknown ones; non-ignorable fields absent from a version must hold their default. KIP-482.
"""

from __future__ import annotations

from metaquorum.protocol.schema.dsl import Field, Message

_PY = {
    "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int",
    "bool": "bool", "float64": "float", "uuid": "Uuid", "string": "str", "bytes": "bytes",
    "records": "bytes",
}  # fmt: skip
_PACK = {"int8": "_P8", "int16": "_P16", "int32": "_P32", "int64": "_P64", "uint16": "_PU16",
         "float64": "_PF64"}  # fmt: skip
_READ = {
    "int8": "r.read_int8()", "int16": "r.read_int16()", "int32": "r.read_int32()",
    "int64": "r.read_int64()", "uint16": "r.read_uint16()", "bool": "r.read_bool()",
    "float64": "r.read_float64()", "uuid": "r.read_uuid()",
}  # fmt: skip


_METHODS = """
def encode(self, version: int) -> bytes:
    out = bytearray()
    self.write(out, version)
    return bytes(out)

def write(self, out: bytearray, version: int) -> None:
    fn = _W_@C.get(version)
    if fn is None:
        raise _codec.unsupported_version("@N", version, @LO, @HI)
    try:
        fn(self, out)
    except struct.error as exc:
        raise ProtocolError(f"@N v{version}: value out of range: {exc}") from None

@classmethod
def decode(cls, data: Buffer, version: int) -> @C:
    r = ByteReader(data)
    m = cls.read(r, version)
    r.ensure_end("@N v" + str(version))
    return m

@classmethod
def read(cls, r: ByteReader, version: int) -> @C:
    fn = _R_@C.get(version)
    if fn is None:
        raise _codec.unsupported_version("@N", version, @LO, @HI)
    return fn(r)
"""


_FMT = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "bool": "?",
        "float64": "d", "uuid": "qq"}  # fmt: skip
_SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "bool": 1, "float64": 8,
         "uuid": 16}  # fmt: skip


# Unknown tags are kept in ascending order; Kafka's RawTaggedFieldWriter refuses any other.
_KEEP_UNKNOWN = [
    "if unk and tag <= unk[-1].tag:",
    "    raise _codec.unknown_tags_out_of_order(unk[-1].tag, tag)",
    "unk.append(RawTaggedField(tag, r.read_raw(size)))",
]


def _indent(lines: list[str], n: int = 1) -> list[str]:
    return [("    " * n + line) if line else line for line in lines]


class StructEmitter:
    def __init__(self, msg: Message) -> None:
        self.msg = msg
        self.cls = msg.class_name
        self.funcs: list[str] = []
        self._bodies: dict[str, str] = {}  # body text -> function name
        self._names: dict[tuple[str, str | None, int], str] = {}
        self.struct_defaults: set[str] = set()
        self.factories: set[str] = set()
        self.run_structs: dict[str, str] = {}

    # ----- types and defaults ---------------------------------------------------------------
    def struct_type(self, name: str | None) -> str:
        return self.cls if name is None else f"{self.cls}.{name}"

    def fields_of(self, struct: str | None) -> tuple[Field, ...]:
        return self.msg.fields if struct is None else self.msg.struct_fields(struct)

    def py_type(self, fld: Field) -> str:
        base = self.struct_type(fld.element_type) if fld.is_struct else _PY[fld.element_type]
        nullable = fld.nullable != "none"
        if fld.is_array:
            return f"list[{base}]" + (" | None" if nullable else "")
        if nullable or fld.type == "records" or (fld.null_default and not fld.is_struct):
            return f"{base} | None"
        return base

    def default_value(self, fld: Field) -> str:
        """Python expression of Kafka's default (immutable values only)."""
        t = fld.type
        if fld.null_default or t == "records":
            return "None"
        if t == "string":
            return repr(fld.default if fld.default is not None else "")
        if t == "bytes":
            return 'b""'
        if t == "uuid":
            return "Uuid.ZERO"
        if t == "bool":
            return repr(bool(fld.default))
        if t == "float64":
            return repr(float(fld.default or 0))  # type: ignore[arg-type]
        return repr(fld.default if fld.default is not None else 0)

    def fresh_default(self, fld: Field) -> str:
        """Expression building the field's default value (a new list / struct when mutable)."""
        if fld.is_array:
            return "[]"
        if fld.is_struct:
            return f"{self.struct_type(fld.element_type)}()"
        return self.default_value(fld)

    def dataclass_default(self, fld: Field) -> str:
        if fld.is_array:
            return "field(default_factory=list)"
        if fld.is_struct:
            self.factories.add(fld.element_type)
            return f"field(default_factory=_new_{self.cls}_{fld.element_type})"
        return self.default_value(fld)

    def non_default_cond(self, fld: Field, expr: str) -> str:
        """Condition that is true when `expr` differs from the field's default (Kafka's rule)."""
        if fld.is_array:
            return expr
        if fld.is_struct:
            inner = self.fields_of(fld.element_type)
            if all(not (f.is_array or f.is_struct) for f in inner):
                # Field by field, as the dataclass `__eq__` would, without its call and tuples.
                conds = [self.non_default_cond(f, f"{expr}.{f.py_name}") for f in inner]
                return " or ".join([*conds, f"{expr}.unknown_tagged_fields"])
            const = f"_D_{self.cls}_{fld.element_type}"
            self.struct_defaults.add(fld.element_type)
            return f"{expr} != {const}"
        if fld.type == "bytes":
            return expr
        default = self.default_value(fld)
        if default == "Uuid.ZERO":
            # Uuid.ZERO is (0, 0): two attribute tests instead of the dataclass `__eq__`.
            return f"{expr}.most_significant_bits or {expr}.least_significant_bits"
        if fld.type == "bool":
            return f"not {expr}" if default == "True" else expr
        if default == "None":
            return f"{expr} is not None"
        return f"{expr} != {default}"

    # ----- class ------------------------------------------------------------------------------
    def dataclass_lines(self, name: str, fields: tuple[Field, ...]) -> list[str]:
        lines = ["@_codec.struct", f"class {name}:"]
        for fld in fields:
            lines.append(f"    {fld.py_name}: {self.py_type(fld)} = {self.dataclass_default(fld)}")
        lines.append(
            "    unknown_tagged_fields: list[RawTaggedField] = field(default_factory=list)"
        )
        return lines

    def class_text(self) -> str:
        m = self.msg
        lines = self.dataclass_lines(self.cls, m.fields)[:2]
        lines += [
            f"    API_KEY: ClassVar[int] = {m.api_key}",
            f'    NAME: ClassVar[str] = "{m.name}"',
            f"    LOWEST_SUPPORTED_VERSION: ClassVar[int] = {m.lowest}",
            f"    HIGHEST_SUPPORTED_VERSION: ClassVar[int] = {m.highest}",
            "",
        ]
        for sname, struct in m.structs.items():
            lines += [*_indent(self.dataclass_lines(sname, struct.fields)), ""]
        lines += self.dataclass_lines(self.cls, m.fields)[2:]
        methods = _METHODS.replace("@C", self.cls).replace("@N", m.name)
        methods = methods.replace("@LO", str(m.lowest)).replace("@HI", str(m.highest))
        lines += _indent(methods.splitlines())
        return "\n".join(lines) + "\n"

    # ----- writers ------------------------------------------------------------------------------
    def _register(self, kind: str, struct: str | None, version: int, body: str) -> str:
        if body in self._bodies:
            name = self._bodies[body]
        else:
            suffix = f"_{struct}" if struct else ""
            name = f"_{kind}_{self.cls}{suffix}_v{version}"
            self._bodies[body] = name
            self.funcs.append(body.replace("{NAME}", name))
        self._names[(kind, struct, version)] = name
        return name

    def writer(self, struct: str | None, v: int) -> str:
        key = ("w", struct, v)
        if key in self._names:
            return self._names[key]
        flexible = self.msg.is_flexible(v)
        where = self.msg.name + (f".{struct}" if struct else "")
        checks: list[str] = []
        body: list[str] = []
        tagged: list[Field] = []
        run: list[Field] = []
        for fld in self.fields_of(struct):
            expr = f"m.{fld.py_name}"
            if v not in fld.version_range():
                if not fld.ignorable:
                    checks += [f"if {self.non_default_cond(fld, expr)}:",
                               f'    raise _codec.non_default("{fld.json_name}", {v})']  # fmt: skip
                continue
            if v in fld.tagged_range():
                tagged.append(fld)
                continue
            if fld.type in _FMT:
                run.append(fld)
                continue
            body += self.write_run(run, v, flexible)
            body += self.write_value(fld, expr, v, flexible=flexible, o="out", depth=0)
        body += self.write_run(run, v, flexible)
        body = checks + body
        if flexible:
            if not tagged:
                body += ["if m.unknown_tagged_fields:",
                         "    _codec.write_tagged(out, (), m.unknown_tagged_fields)",
                         "else:", "    out.append(0)"]  # fmt: skip
            else:
                body.append("tf: list[tuple[int, bytes]] = []")
                for fld in sorted(tagged, key=lambda x: x.tag or 0):
                    expr = f"m.{fld.py_name}"
                    body.append(f"if {self.non_default_cond(fld, expr)}:")
                    packed = self.packed_value(fld, expr)
                    if packed is not None:  # a fixed-width value: its packer's bytes as they are
                        body.append(f"    tf.append(({fld.tag}, {packed}))")
                        continue
                    inner = ["b = bytearray()"]
                    inner += self.write_value(fld, expr, v, flexible=flexible, o="b", depth=0)
                    inner.append(f"tf.append(({fld.tag}, bytes(b)))")
                    body += _indent(inner)
                body += ["if tf or m.unknown_tagged_fields:",
                         "    _codec.write_tagged(out, tf, m.unknown_tagged_fields)",
                         "else:", "    out.append(0)"]  # fmt: skip
        else:
            body += ["if m.unknown_tagged_fields:",
                     f'    raise _codec.tags_unsupported("{where}", {v})']  # fmt: skip
        text = "\n".join(
            [
                f"def {{NAME}}(m: {self.struct_type(struct)}, out: bytearray) -> None:",
                *_indent(body or ["pass"]),
            ]
        )
        return self._register("w", struct, v, text + "\n")

    def write_value(
        self, fld: Field, expr: str, v: int, *, flexible: bool, o: str, depth: int
    ) -> list[str]:
        compact = flexible and fld.flexible != "none"
        nullable = v in fld.nullable_range()
        if fld.is_array:
            a, e = f"a_{fld.py_name}{depth}", f"e_{fld.py_name}{depth}"
            null_marker = "0" if compact else "0xFF, 0xFF, 0xFF, 0xFF"
            # A compact count below 127 is one byte: appended here, no call (docs/performance.md).
            length = ([f"if len({a}) < 127:", f"    {o}.append(len({a}) + 1)", "else:",
                       f"    write_unsigned_varint({o}, len({a}) + 1)"] if compact
                      else [f"{o} += _P32(len({a}))"])  # fmt: skip
            if fld.is_struct:
                elem = [f"{self.writer(fld.element_type, v)}({e}, {o})"]
            else:
                elem_fld = Field(fld.name, fld.element_type, fld.versions)
                elem = self.write_value(elem_fld, e, v, flexible=flexible, o=o, depth=depth + 1)
            loop = [*length, f"for {e} in {a}:", *_indent(elem)]
            lines = [f"{a} = {expr}"]
            if nullable:
                lines += [f"if {a} is None:", f"    {o}.extend(({null_marker},))", "else:"]
                lines += _indent(loop)
            else:
                lines += loop
            return lines
        if fld.is_struct:
            return [f"{self.writer(fld.element_type, v)}({expr}, {o})"]
        t = fld.type
        if t in _PACK:
            return [f"{o} += {_PACK[t]}({expr})"]
        if t == "bool":
            return [f"{o}.append(1 if {expr} else 0)"]
        if t == "uuid":
            return [f"{o} += _PUUID({expr}.most_significant_bits, {expr}.least_significant_bits)"]
        kind = "string" if t == "string" else "bytes"
        fn = ("write_compact_" if compact else "write_") + ("nullable_" if nullable else "") + kind
        if t == "records" and not nullable:
            return [f"if {expr} is None:",
                    f'    raise _codec.null_in_non_nullable("{fld.json_name}", {v})',
                    f"{fn}({o}, {expr})"]  # fmt: skip
        return [f"{fn}({o}, {expr})"]

    def packed_value(self, fld: Field, expr: str) -> str | None:
        """The bytes of a fixed-width (non-array) value as one packer call, or None."""
        if fld.is_array or fld.is_struct:
            return None
        if fld.type in _PACK:
            return f"{_PACK[fld.type]}({expr})"
        if fld.type == "uuid":
            return f"_PUUID({expr}.most_significant_bits, {expr}.least_significant_bits)"
        return None

    def _run_struct(self, run: list[Field]) -> str:
        fmt = "".join(_FMT[f.type] for f in run)
        name = f"_S_{self.cls}_{fmt.replace('?', 'o')}"
        self.run_structs[name] = ">" + fmt
        return name

    def write_run(self, run: list[Field], v: int, flexible: bool) -> list[str]:
        """Consecutive fixed-width fields: one `struct.pack` (a single field: its own packer)."""
        if not run:
            return []
        if len(run) == 1:
            fld = run.pop()
            return self.write_value(fld, f"m.{fld.py_name}", v, flexible=flexible, o="out", depth=0)
        args: list[str] = []
        for fld in run:
            expr = f"m.{fld.py_name}"
            if fld.type == "uuid":
                args += [f"{expr}.most_significant_bits", f"{expr}.least_significant_bits"]
            else:
                args.append(expr)
        name = self._run_struct(run)
        run.clear()
        return [f"out += {name}.pack({', '.join(args)})"]

    def read_run(self, run: list[Field], v: int, flexible: bool) -> list[str]:
        if not run:
            return []
        if len(run) == 1:
            fld = run.pop()
            return self.read_value(fld, f"f_{fld.py_name}", v, flexible=flexible, depth=0)
        names: list[str] = []
        uuids: list[str] = []
        size = 0
        for fld in run:
            var = f"f_{fld.py_name}"
            size += _SIZE[fld.type]
            if fld.type == "uuid":
                names += [f"{var}_msb", f"{var}_lsb"]
                uuids.append(f"{var} = Uuid({var}_msb, {var}_lsb)")
            else:
                names.append(var)
        name = self._run_struct(run)
        run.clear()
        return [f"({', '.join(names)}) = r.unpack({name})", *uuids]

    # ----- readers ------------------------------------------------------------------------------
    def reader(self, struct: str | None, v: int) -> str:
        key = ("r", struct, v)
        if key in self._names:
            return self._names[key]
        flexible = self.msg.is_flexible(v)
        body: list[str] = []
        args: list[str] = []
        tagged: list[Field] = []
        run: list[Field] = []
        for fld in self.fields_of(struct):
            if v not in fld.version_range():
                continue
            if v in fld.tagged_range():
                tagged.append(fld)
                continue
            if fld.type in _FMT:
                run.append(fld)
                continue
            body += self.read_run(run, v, flexible)
            body += self.read_value(fld, f"f_{fld.py_name}", v, flexible=flexible, depth=0)
        body += self.read_run(run, v, flexible)
        if flexible:
            for fld in tagged:
                default = self.dataclass_default(fld)
                if default.startswith("field(default_factory=list"):
                    default = "[]"
                elif default.startswith("field("):
                    # A struct's default is built only if its tag is absent (in the return).
                    body.append(f"f_{fld.py_name}: {self.py_type(fld)} | None = None")
                    continue
                body.append(f"f_{fld.py_name}: {self.py_type(fld)} = {default}")
            body += ["unk: list[RawTaggedField] = []",
                     "for _ in range(r.read_unsigned_varint()):",
                     "    tag = r.read_unsigned_varint()",
                     "    size = r.read_unsigned_varint()"]  # fmt: skip
            branch = "if"
            for fld in sorted(tagged, key=lambda x: x.tag or 0):
                inner = ["end = r.pos + size"]
                inner += self.read_value(
                    fld, f"f_{fld.py_name}", v, flexible=flexible, depth=0, declare=False
                )
                inner += ["if r.pos != end:",
                          "    raise _codec.tagged_size_mismatch("
                          f'"{fld.json_name}", tag, end, r.pos)']  # fmt: skip
                body += _indent([f"{branch} tag == {fld.tag}:", *_indent(inner)])
                branch = "elif"
            # Kafka refuses a tag the struct knows in other versions ("Tag N is not valid").
            other = sorted({fld.tag for fld in self.fields_of(struct) if fld.tag is not None}
                           - {fld.tag for fld in tagged})  # fmt: skip
            if other:
                cond = f"tag == {other[0]}" if len(other) == 1 else f"tag in {tuple(other)}"
                body += _indent([f"{branch} {cond}:",
                                 f"    raise _codec.invalid_tag(tag, {v})"])  # fmt: skip
                branch = "elif"
            if tagged or other:
                body += _indent(["else:", *_indent(_KEEP_UNKNOWN)])
            else:
                body += _indent(_KEEP_UNKNOWN)
        # Positional arguments in field order (~40% cheaper than keywords for a frozen class).
        for fld in self.fields_of(struct):
            var = f"f_{fld.py_name}"
            if v not in fld.version_range():
                args.append(self.fresh_default(fld))
            elif flexible and fld.is_struct and not fld.is_array and v in fld.tagged_range():
                args.append(f"{self.fresh_default(fld)} if {var} is None else {var}")
            else:
                args.append(var)
        args.append("unk" if flexible else "[]")
        ctor = f"{self.struct_type(struct)}({', '.join(args)})"
        text = "\n".join(
            [
                f"def {{NAME}}(r: ByteReader) -> {self.struct_type(struct)}:",
                *_indent([*body, f"return {ctor}"]),
            ]
        )
        return self._register("r", struct, v, text + "\n")

    def read_value(
        self, fld: Field, var: str, v: int, *, flexible: bool, depth: int, declare: bool = True
    ) -> list[str]:
        compact = flexible and fld.flexible != "none"
        nullable = v in fld.nullable_range()
        if fld.is_array:
            n = f"n_{fld.py_name}{depth}"
            count = "r.read_compact_array_length()" if compact else "r.read_array_length()"
            if fld.is_struct:
                elem = f"{self.reader(fld.element_type, v)}(r)"
            else:
                elem = _READ[fld.element_type]
            lines = [f"{n} = {count}"]
            if declare:
                lines.append(f"{var}: {self.py_type(fld)}")
            lines.append(f"if {n} < 0:")
            if nullable:
                lines.append(f"    {var} = None")
            else:
                lines.append(f'    raise _codec.null_in_non_nullable("{fld.json_name}", {v})')
            lines += ["else:", f"    {var} = [{elem} for _ in range({n})]"]
            return lines
        if fld.is_struct:
            return [f"{var} = {self.reader(fld.element_type, v)}(r)"]
        t = fld.type
        if t in _READ:
            return [f"{var} = {_READ[t]}"]
        kind = "string" if t == "string" else "bytes"
        fn = ("read_compact_" if compact else "read_") + ("nullable_" if nullable else "") + kind
        return [f"{var} = r.{fn}()"]

    # ----- module text ------------------------------------------------------------------------
    def emit(self) -> str:
        c = self.cls
        versions = list(self.msg.versions())
        writers = {v: self.writer(None, v) for v in versions}
        readers = {v: self.reader(None, v) for v in versions}
        class_text = self.class_text()
        parts = [
            f"def _new_{c}_{s}() -> {c}.{s}:\n    return {c}.{s}()\n"
            for s in sorted(self.factories)
        ]
        parts.append(class_text)
        parts += [f'{n} = struct.Struct("{f}")' for n, f in sorted(self.run_structs.items())]
        parts += [f"_D_{c}_{s} = {c}.{s}()" for s in sorted(self.struct_defaults)]
        parts.append("")
        parts += self.funcs
        parts.append(f"_W_{c} = {{{', '.join(f'{v}: {n}' for v, n in writers.items())}}}")
        parts.append(f"_R_{c} = {{{', '.join(f'{v}: {n}' for v, n in readers.items())}}}")
        return "\n\n".join(parts) + "\n"

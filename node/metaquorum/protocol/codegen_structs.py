"""Emit the Python source of one message: its dataclasses and its per-version codec functions.

Role: used by `codegen.py`. For a `Message` it writes the top-level dataclass (with nested struct
dataclasses), module-level default instances of struct-typed fields, one writer and one reader
function per (struct, version) — identical bodies are shared — and the version tables the
class methods dispatch on. The writers are here; the readers come from `codegen_readers.py`,
the shared types and defaults from `codegen_base.py`.

Invariants of the emitted code: every read goes through `ByteReader` (bounds-checked, raises
ProtocolError); tagged fields are written only when non-default, ascending by tag, merged with
the unknown ones; non-ignorable fields absent from a version must hold their default. KIP-482.
"""

from __future__ import annotations

from metaquorum.protocol.codegen_base import _FMT, _PACK, _indent
from metaquorum.protocol.codegen_readers import ReaderEmitter
from metaquorum.protocol.schema.dsl import Field

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


class StructEmitter(ReaderEmitter):
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

"""Emit the per-version reader functions of one message (used by `codegen_structs.py`).

Invariants of the emitted code: every read goes through `ByteReader` (bounds-checked, raises
ProtocolError; a run of fixed-width fields is one `r.unpack`); a tagged struct field's default
is built only when its tag is absent; unknown tags are kept in ascending order, a tag the
struct knows only in other versions is refused. KIP-482.
"""

from __future__ import annotations

from metaquorum.protocol.codegen_base import _FMT, _READ, _SIZE, EmitterBase, _indent
from metaquorum.protocol.schema.dsl import Field

# Unknown tags are kept in ascending order; Kafka's RawTaggedFieldWriter refuses any other.
_KEEP_UNKNOWN = [
    "if unk and tag <= unk[-1].tag:",
    "    raise _codec.unknown_tags_out_of_order(unk[-1].tag, tag)",
    "unk.append(RawTaggedField(tag, r.read_raw(size)))",
]


class ReaderEmitter(EmitterBase):
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

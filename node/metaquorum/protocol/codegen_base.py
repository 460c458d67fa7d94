"""The code generator's shared state and Python types for one message (`codegen_structs.py`).

Role: `EmitterBase` knows a message's fields, their Python types and Kafka defaults, the
condition "differs from its default" (Kafka's rule for tagged and version-absent fields), and
registers each emitted function once per distinct body. The readers (`codegen_readers.py`)
and the writers and class (`codegen_structs.py`) build on it.
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


_FMT = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "bool": "?",
        "float64": "d", "uuid": "qq"}  # fmt: skip
_SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "bool": 1, "float64": 8,
         "uuid": 16}  # fmt: skip


def _indent(lines: list[str], n: int = 1) -> list[str]:
    return [("    " * n + line) if line else line for line in lines]


class EmitterBase:
    def __init__(self, msg: Message) -> None:
        self.msg = msg
        self.cls = msg.class_name
        self.funcs: list[str] = []
        self._bodies: dict[str, str] = {}  # body text -> function name
        self._names: dict[tuple[str, str | None, int], str] = {}
        self.struct_defaults: set[str] = set()
        self.factories: set[str] = set()
        self.run_structs: dict[str, str] = {}

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

    def _run_struct(self, run: list[Field]) -> str:
        fmt = "".join(_FMT[f.type] for f in run)
        name = f"_S_{self.cls}_{fmt.replace('?', 'o')}"
        self.run_structs[name] = ">" + fmt
        return name

"""Build the compiled hot path (issue 28, docs/performance.md rounds 7-8 and 11): mypyc over the
Raft core, the record-batch codec, the protocol's byte reader, primitive writers and generated
message modules, the runtime modules a committed write runs through (driver, server,
connections, frame codec, storage thread and log) and the simulator, in a COPY of the package.

Role: `make compiled` runs this. It copies `node/metaquorum` to `build/compiled/metaquorum`,
compiles `COMPILED` there with mypyc (C extension modules next to their .py files) and leaves
the sources untouched: `PYTHONPATH=build/compiled` selects the compiled build, without it the
pure-Python package runs (the reference, and what the monkeypatching planted-bug tests need).

Invariants: the compiled tree is rebuilt whenever any source file, this script, mypy's version
or the interpreter changes (a SHA-256 stamp); a failed build leaves no half-built tree (it is
built beside and renamed into place); concurrent callers (`make compiled` and the node image's
build stage, e2e/tools/build_images.py, in `make test`'s background prebuild) serialise on a lock
file beside the tree, so one builds and the other finds the stamp current. One transform is
applied to the copy only: `@value` (core/value.py: frozen to mypy, a plain slotted dataclass at
run time) becomes `@dataclass(unsafe_hash=True)`, the decorator mypyc compiles into a native
class; the source stays checked as frozen by `make lint`, so no code assigns a field either way.
The generated message modules and `protocol/_codec.py` get scripts/compiled_structs.py's
transform (their nested structs hoisted, their methods written out).

Usage: python scripts/build_compiled.py [--out DIR] [--force]   (prints the tree's path)
"""

from __future__ import annotations

import argparse
import ast
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compiled_structs

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "node" / "metaquorum"
# Leaves that stay interpreted: the core's exceptions (mypyc cannot subclass most builtins) and
# `core/value.py` (its run-time definitions are behind `TYPE_CHECKING`, which mypyc compiles as
# unreachable).
INTERPRETED = {
    "core/__init__.py",
    "core/errors.py",
    "core/value.py",
    "protocol/records/__init__.py",
    "sim/__init__.py",
    "sim/__main__.py",
    "protocol/messages/__init__.py",
}
COMPILED_GLOBS = (
    "core/*.py",
    "protocol/records/*.py",
    "protocol/byte_reader.py",
    # Round 8: the runtime modules a committed write runs through (py-spy, one client: the
    # driver, the server's and the peers' connections, the frame codec, the storage thread and
    # log, the produce path, the metrics), -9.5% of a write's instructions (commit_ir, 3.01 ->
    # 2.72 M). Not `runtime/client_api.py`: its tests drive it with a duck-typed driver.
    "net/connection.py",
    "net/wire.py",
    "runtime/appends.py",
    "runtime/batch_bytes.py",
    "runtime/clock.py",
    "runtime/driver.py",
    "runtime/node.py",
    "runtime/peers.py",
    "runtime/produce.py",
    "runtime/raft_metrics.py",
    "runtime/records_bridge.py",
    "runtime/server.py",
    "runtime/snapshot_policy.py",
    "runtime/state_machine.py",
    "runtime/storage_io.py",
    "storage/log.py",
    "storage/segment.py",
    # The simulator (round 8): its network, disk and invariant checks were most of a simulated
    # event once the core was compiled; `membership` 28-39k -> 53-57k events/s. The sim tier's
    # planted bugs replace functions, so that tier runs the pure package (Makefile).
    "sim/*.py",
    # Round 11: the generated message classes and their codecs (scripts/compiled_structs.py
    # hoists their nested structs and writes their methods out in the copy).
    "protocol/messages/*.py",
    "protocol/_codec.py",
    "protocol/types.py",
)
VALUE_DECORATOR = re.compile(r"^@value$", re.MULTILINE)


def compiled_modules(root: Path = SOURCE) -> list[str]:
    """The package-relative paths mypyc compiles, sorted."""
    found = {p.relative_to(root).as_posix() for g in COMPILED_GLOBS for p in root.glob(g)}
    return sorted(found - INTERPRETED)


def stamp() -> str:
    """What the build depends on: every source file, this script, mypy and the interpreter."""
    import mypy.version

    h = hashlib.sha256()
    h.update(f"{sys.version} {sysconfig.get_platform()} mypy {mypy.version.__version__}".encode())
    h.update(Path(__file__).read_bytes())
    h.update(Path(compiled_structs.__file__).read_bytes())
    for p in sorted(SOURCE.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        h.update(p.relative_to(SOURCE).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


# Classes with a base mypyc cannot compile natively (asyncio's protocols, builtin exceptions
# other than Exception, ssl's objects) are compiled as non-native classes (their methods are still
# C); mypyc then needs `asyncio.protocols` imported by name in that module.
NON_NATIVE = re.compile(
    r"^(class \w+\((?:asyncio\.Protocol|ConnectionError|TypeError|ssl\.SSLObject)\):)$",
    re.MULTILINE,
)
NON_NATIVE_IMPORTS = (
    "import asyncio.protocols\nfrom mypy_extensions import mypyc_attr as _mypyc_attr\n"
)


# `@value` (core/value.py) is a slotted dataclass with unsafe_hash at run time. mypyc compiles
# such a class natively, but the methods `dataclasses` writes at run time stay interpreted
# (`exec`'d: `<string>:2(__init__)` under cProfile; on the simulator ~100k of them per 27k
# events: ElectionState, OffsetAndEpoch, Step, ReplicaKey, the events and effects). So a plain
# `@value` class (annotated fields with or without a default, or a `field(...)` as
# compiled_structs.FIELD_KEYWORDS allows; no `ClassVar`, base class, or method of those names)
# gets written out what `dataclasses` would generate (compiled_structs.write_methods) --
# `__init__` (the fields in order, their defaults, then `__post_init__` if defined), `__eq__`
# (same class and equal field tuples, else NotImplemented), `__hash__` (the field tuple's) -- and
# plain `@dataclass`, which keeps the methods a class defines (its `__hash__` too: eq=True with
# an explicit `__hash__`). Any other `@value` class gets `@dataclass(unsafe_hash=True)` as
# before. The compiled tier's trace digests (pure vs compiled) check the semantics are the same.
DECORATOR_PLAIN = "@_mypyc_dataclass"
DECORATOR_DEFAULT = "@_mypyc_dataclass(unsafe_hash=True)"
METHODS = {"__init__", "__eq__", "__hash__"}


def _fields(cls: ast.ClassDef, text: str) -> list[compiled_structs.Field] | None:
    """The fields (compiled_structs.read_fields), or None when the class is not plain."""
    if cls.bases or cls.keywords:
        return None
    return compiled_structs.read_fields(cls, text, methods=METHODS, skip_class_vars=False)


def _methods(cls: ast.ClassDef, fields: list[compiled_structs.Field], pad: str) -> str:
    return compiled_structs.write_methods(cls, fields, pad, with_hash=True, with_repr=False)


def add_methods(text: str, decorator: str = "@value") -> str:
    """`text` with each plain `@value` class's methods written out and its decorator set to
    DECORATOR_PLAIN; every other `@value` gets DECORATOR_DEFAULT."""
    tree = ast.parse(text)
    lines = text.split("\n")
    edits: list[tuple[int, int, list[str]]] = []  # (first line, lines replaced, new lines)
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        decos = [d for d in cls.decorator_list if isinstance(d, ast.Name) and d.id == "value"]
        if not decos:
            continue
        deco_line = decos[0].lineno - 1
        fields = _fields(cls, text)
        if fields is None:
            edits.append((deco_line, 1, [lines[deco_line].replace(decorator, DECORATOR_DEFAULT)]))
            continue
        # at the end of the class body, so a default may name anything the class defines
        pad = " " * cls.body[0].col_offset
        edits.append((cls.end_lineno or cls.lineno, 0, ["", _methods(cls, fields, pad)]))
        edits.append((deco_line, 1, [lines[deco_line].replace(decorator, DECORATOR_PLAIN)]))
    for start, n, new in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[start : start + n] = new
    return "\n".join(lines)


def transform(text: str) -> str:
    """For mypyc only: `@value` -> `@dataclass`, its methods written out (add_methods), or
    `@dataclass(unsafe_hash=True)` (with the import); a class on a base mypyc cannot compile
    natively gets `@mypyc_attr(native_class=False)`."""
    head = "from __future__ import annotations\n"
    imports = ""
    if NON_NATIVE.search(text):
        text = NON_NATIVE.sub(r"@_mypyc_attr(native_class=False)\n\1", text)
        imports += NON_NATIVE_IMPORTS
    if VALUE_DECORATOR.search(text):
        text = add_methods(text)
        imports += "from dataclasses import dataclass as _mypyc_dataclass\n"
        if compiled_structs.UNSET in text:
            imports += "from typing import Any as _MypycAny\n" + compiled_structs.UNSET_DEF
    if not imports:
        return text
    if head not in text:
        raise SystemExit(
            "build_compiled: a module it transforms lacks `from __future__ import annotations`"
        )
    return text.replace(head, head + "\n" + imports, 1)


def toolchain() -> None:
    """A C compiler and this interpreter's headers, from Debian's packages when missing."""
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    wanted = []
    if shutil.which("gcc") is None:
        wanted.append("gcc")
    if not headers.is_file():
        if not str(Path(sys.executable).resolve()).startswith("/usr/bin/"):  # not Debian's
            raise SystemExit(
                f"build_compiled: no {headers}: install this Python's headers, or BUILD=pure"
            )
        wanted.append(f"python3.{sys.version_info.minor}-dev")
    if wanted:
        print(
            f"build_compiled: installing {' '.join(wanted)} from Debian's packages", file=sys.stderr
        )
        done = subprocess.run([str(ROOT / "scripts" / "apt-install.sh"), *wanted], check=False)
        if done.returncode != 0:
            raise SystemExit(
                f"build_compiled: installing {' '.join(wanted)} failed; install it, or BUILD=pure"
            )


def build(out: Path) -> None:
    toolchain()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    pkg = tmp / "metaquorum"
    shutil.copytree(SOURCE, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    modules = compiled_modules()
    for rel in modules:
        f = pkg / rel
        text = f.read_text()
        if rel.startswith("protocol/messages/"):
            text = compiled_structs.transform(text)
        elif rel == "protocol/_codec.py":
            text = compiled_structs.transform_codec(text)
        f.write_text(transform(text))
    env = {**os.environ, "MYPYPATH": str(tmp)}
    argv = [sys.executable, "-m", "mypyc", *[f"metaquorum/{m}" for m in modules]]
    run = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.stderr.write(run.stdout[-4000:] + run.stderr[-4000:])
        raise SystemExit(
            f"build_compiled: mypyc failed (exit {run.returncode}); tree left in {tmp}"
        )
    missing = [m for m in modules if not list((pkg / m).parent.glob(Path(m).stem + ".*.so"))]
    if missing:
        raise SystemExit(f"build_compiled: no extension module built for {missing}")
    shutil.rmtree(tmp / "build", ignore_errors=True)  # mypyc's C sources and objects
    shutil.rmtree(tmp / ".mypy_cache", ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/build_compiled.py", description=__doc__)
    p.add_argument("--out", type=Path, default=ROOT / "build" / "compiled")
    p.add_argument("--force", action="store_true")
    a = p.parse_args(argv)
    out: Path = a.out.resolve()
    want = stamp()
    mark = out / "STAMP"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if a.force or not mark.is_file() or mark.read_text().strip() != want:
            print(
                f"build_compiled: compiling {len(compiled_modules())} modules with mypyc"
                " (~5.5 min)",
                file=sys.stderr,
            )
            build(out)
            mark.write_text(want + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""scripts/build_compiled.py (issue 28): what it compiles and the one transform it applies to
the copy. The build itself (a C compile) runs in the `compiled` tier of `make test`, where the
simulator's traces on the compiled tree are checked against this pure-Python package."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_compiled", ROOT / "scripts/build_compiled.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["build_compiled"] = mod
    spec.loader.exec_module(mod)
    return mod


bc = _load()


def test_compiles_the_core_records_and_reader_but_not_the_interpreted_leaves() -> None:
    mods = bc.compiled_modules()
    assert "core/node.py" in mods and "core/fetch.py" in mods
    assert "protocol/records/batch.py" in mods and "protocol/byte_reader.py" in mods
    for leaf in ("core/errors.py", "core/value.py", "core/__init__.py"):
        assert leaf not in mods
    assert "runtime/driver.py" in mods and "runtime/server.py" in mods and "net/wire.py" in mods
    assert "runtime/client_api.py" not in mods  # its tests drive it with a duck-typed driver
    assert "sim/cluster.py" in mods and "sim/__main__.py" not in mods
    assert "protocol/messages/fetch.py" in mods and "protocol/messages/__init__.py" not in mods
    allowed = ("core/", "protocol/records/", "protocol/byte_reader", "runtime/", "net/", "storage/")
    allowed += ("sim/", "protocol/messages/", "protocol/_codec.py", "protocol/types.py")
    assert all(m.startswith(allowed) for m in mods)


def test_classes_on_bases_mypyc_cannot_compile_natively_become_non_native() -> None:
    src = (
        '"""doc"""\n\nfrom __future__ import annotations\n\nimport asyncio\n\n\n'
        "class P(asyncio.Protocol):\n    pass\n\n\nclass E(ConnectionError):\n    pass\n\n\n"
        "class T(TypeError):\n    pass\n\n\n"
        "class N:\n    pass\n"
    )
    out = bc.transform(src)
    assert "@_mypyc_attr(native_class=False)\nclass P(asyncio.Protocol):" in out
    assert "@_mypyc_attr(native_class=False)\nclass E(ConnectionError):" in out
    assert "@_mypyc_attr(native_class=False)\nclass T(TypeError):" in out
    assert "@_mypyc_attr(native_class=False)\nclass N" not in out
    assert (
        "import asyncio.protocols\nfrom mypy_extensions import mypyc_attr as _mypyc_attr\n" in out
    )
    scope: dict[str, object] = {}
    exec(compile(out, "t", "exec"), scope)  # still valid Python, the decorator a no-op at run time
    assert issubclass(scope["E"], ConnectionError)  # type: ignore[arg-type]


VALUE_SRC = (
    '"""doc"""\n\nfrom __future__ import annotations\n\n'
    "from dataclasses import field\n\n"
    "from metaquorum.core.value import value\n\n\n"
    "@value\nclass A:\n    x: int\n\n\n"
    '@value\nclass B:\n    """doc"""\n\n    y: int = 0\n    z: str | None = None\n\n\n'
    "@value\nclass C:\n    xs: list[int] = field(default_factory=list)\n\n\n"
    "@value\nclass D:\n    n: int\n    m: int = 0\n\n"
    "    def __post_init__(self) -> None:\n        self.m = self.n * 2\n\n\n"
    "@value\nclass E:\n    pass\n\n\n"
    "@value\nclass F:\n    LIMIT = 3\n    m: int = LIMIT\n"  # a default naming the class's own
    "\n\n@value\nclass G:\n    n: int\n"
    "    d: dict[int, int] = field(default_factory=dict, compare=False, repr=False)\n"
    "    t: tuple[int, ...] = field(default=(), compare=True)\n"
    "\n\n@value\nclass H:\n    n: int = 0\n    k: int = field(init=False)\n\n"
    "    def __post_init__(self) -> None:\n        object.__setattr__(self, 'k', self.n + 1)\n"
)


def _exec(text: str) -> dict[str, Any]:
    scope: dict[str, Any] = {}
    exec(compile(text.replace("from metaquorum.core.value import value\n", ""), "t", "exec"), scope)
    return scope


def test_value_classes_become_dataclasses_mypyc_compiles() -> None:
    """Plain `@value` classes get `__init__`, `__eq__` and `__hash__` written out (mypyc compiles
    them; dataclasses' own are exec'd, so interpreted) and plain `@dataclass`, `field(...)` with a
    default, a factory or `compare` too; a class with another field (`init=False`) keeps
    `@dataclass(unsafe_hash=True)`."""
    out = bc.transform(VALUE_SRC)
    assert "@value" not in out
    assert out.count("@_mypyc_dataclass\nclass") == 7
    assert out.count("@_mypyc_dataclass(unsafe_hash=True)\nclass H:") == 1  # init=False
    assert out.count("def __init__(self") == 7
    assert "    z: str | None = None\n\n    def __init__(self, y: int = 0, z: str | None" in out
    assert (
        "from __future__ import annotations\n\n"
        "from dataclasses import dataclass as _mypyc_dataclass\n" in out
    )


def test_the_written_methods_behave_as_the_dataclass_ones() -> None:
    """The oracle is `dataclasses` itself: the same module with `@value` as the pure build has it
    (a slotted dataclass with unsafe_hash) against the transformed one."""
    ours = _exec(bc.transform(VALUE_SRC))
    theirs = _exec(
        VALUE_SRC.replace("@value", "@dataclass(slots=True, unsafe_hash=True)").replace(
            "from dataclasses import field\n", "from dataclasses import dataclass, field\n"
        )
    )
    cases: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("A", (1,), {}),
        ("A", (), {"x": 2}),
        ("B", (), {}),
        ("B", (3,), {"z": "q"}),
        ("C", (), {}),
        ("C", ([1],), {}),
        ("D", (4,), {}),
        ("D", (4, 9), {}),
        ("E", (), {}),
        ("F", (), {}),
        ("F", (7,), {}),
        ("G", (1,), {}),
        ("G", (1, {2: 3}), {}),
        ("G", (1,), {"t": (4,)}),
        ("H", (2,), {}),
    ]
    for name, args, kwargs in cases:
        a, b = ours[name](*args, **kwargs), theirs[name](*args, **kwargs)
        assert repr(a) == repr(b), name
        assert dataclasses.astuple(a) == dataclasses.astuple(b), name
        twin = ours[name](*args, **kwargs)
        assert a == twin and (a != twin) is False
        if name != "C":  # a list field: unhashable in both
            assert hash(a) == hash(b), name
            assert {a: 1}[ours[name](*args, **kwargs)] == 1
        assert (a == object()) is False and a.__eq__(object()) is NotImplemented
        assert [f.name for f in dataclasses.fields(a)] == [f.name for f in dataclasses.fields(b)]
        assert dataclasses.replace(a) == a
    assert ours["A"](1) != ours["A"](2) and ours["B"](1) != ours["B"](1, "z")
    assert ours["D"](4).m == 8  # __post_init__ ran
    for scope in (ours, theirs):  # compare=False: out of eq and hash; a fresh dict each
        g = scope["G"]
        assert g(1, {2: 3}) == g(1) and hash(g(1, {2: 3})) == hash(g(1))
        assert g(1).d is not g(1).d and g(1) != g(1, t=(5,))
        assert scope["H"](2).k == 3
    for name, args in (("A", ()), ("A", (1, 2)), ("B", (1, "z", 3))):
        for scope in (ours, theirs):
            with pytest.raises(TypeError):
                scope[name](*args)


def test_every_value_class_of_the_tree_transforms_to_valid_python() -> None:
    written = left = 0
    for rel in bc.compiled_modules():
        text = (bc.SOURCE / rel).read_text()
        if not bc.VALUE_DECORATOR.search(text):
            continue
        out = bc.transform(text)
        ast.parse(out)
        assert "@value\n" not in out, rel
        written += out.count("@_mypyc_dataclass\nclass")
        left += out.count("@_mypyc_dataclass(unsafe_hash=True)\nclass")
    assert written > 40 and left > 0, (written, left)


def test_a_module_without_value_classes_is_unchanged() -> None:
    src = "from __future__ import annotations\n\n# @value in a comment is left alone\nx = 1\n"
    assert bc.transform(src) == src


def test_a_value_module_without_future_annotations_is_refused() -> None:
    with pytest.raises(SystemExit, match="__future__"):
        bc.transform("@value\nclass A:\n    x: int\n")


def test_the_stamp_changes_with_a_source_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "metaquorum"
    (pkg / "core").mkdir(parents=True)
    (pkg / "core" / "node.py").write_text("x = 1\n")
    monkeypatch.setattr(bc, "SOURCE", pkg)
    first = bc.stamp()
    assert bc.stamp() == first
    (pkg / "core" / "node.py").write_text("x = 2\n")
    assert bc.stamp() != first


def test_the_trace_check_refuses_a_build_that_did_not_load_the_compiled_core(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`trace_digest --against-build DIR` must fail when the child on `PYTHONPATH=DIR` ran the
    pure-Python core (here: an empty directory), however equal the digests would be."""
    from tests.sim import trace_digest

    assert trace_digest.against_build(tmp_path, seeds=1, workers=1) == 1
    out = capsys.readouterr().out
    assert "not compiled" in out and "node.py" in out


def test_concurrent_builds_of_one_tree_serialise_and_the_second_finds_it_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make compiled` and the node image's build stage (make test's background prebuild) may
    ask for build/compiled at once: one builds, the other waits on the lock and finds the stamp
    current (without the lock both built into the same `.tmp` tree)."""
    import threading
    import time

    inside, builds, overlap = [0], [0], [False]

    def fake_build(out: Path) -> None:
        inside[0] += 1
        overlap[0] = overlap[0] or inside[0] > 1
        builds[0] += 1
        time.sleep(0.3)
        out.mkdir(parents=True, exist_ok=True)
        inside[0] -= 1

    monkeypatch.setattr(bc, "build", fake_build)
    monkeypatch.setattr(bc, "stamp", lambda: "s1")
    out = tmp_path / "compiled"
    threads = [threading.Thread(target=bc.main, args=(["--out", str(out)],)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not overlap[0], "two builds of one tree at once"
    assert builds[0] == 1, "the second caller rebuilt a current tree"
    assert (out / "STAMP").read_text().strip() == "s1"

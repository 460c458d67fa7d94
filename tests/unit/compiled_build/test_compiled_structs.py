"""scripts/compiled_structs.py (issue 28, round 11): the compiled build's copy of each generated
message module, with its nested structs hoisted and its methods written out, behaves as the
generated module does. The oracle is the generated module itself (dataclasses' methods, the
nested classes): each transformed module is loaded here interpreted, and Kafka's bytes decoded
by it must re-encode to the same bytes, and show the same repr, fields and equality. The compiled
tier runs the whole unit tier (round trips, goldens from Kafka's jars) on the mypyc build too."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metaquorum.protocol.messages import MESSAGES

from tests.support.message_strategies import all_message_versions, strategy_for

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import compiled_structs  # noqa: E402

MODULES = sorted(
    p.stem
    for p in (ROOT / "node/metaquorum/protocol/messages").glob("*.py")
    if p.stem != "__init__"
)


def _transformed(stem: str) -> ModuleType:
    name = f"metaquorum.protocol.messages._mypyc_{stem}"
    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / f"node/metaquorum/protocol/messages/{stem}.py"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    exec(compile(compiled_structs.transform(path.read_text()), str(path), "exec"), mod.__dict__)
    return mod


def _structs(mod: ModuleType) -> dict[str, type]:
    """Top-level generated classes of a module (the pure one nests its structs)."""
    return {
        k: v
        for k, v in vars(mod).items()
        if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == mod.__name__
    }


@pytest.mark.parametrize("stem", MODULES)
def test_nested_structs_are_hoisted_and_still_reachable_by_their_nested_name(stem: str) -> None:
    pure = importlib.import_module(f"metaquorum.protocol.messages.{stem}")
    ours = _transformed(stem)
    text = compiled_structs.transform((ROOT / f"node/metaquorum/protocol/messages/{stem}.py")
                                      .read_text())  # fmt: skip
    assert "@_codec.struct" not in text and "    @_mypyc_dataclass" not in text  # none nested
    for name, cls in _structs(pure).items():
        mine = getattr(ours, name)
        assert [f.name for f in dataclasses.fields(mine)] == [
            f.name for f in dataclasses.fields(cls)
        ]
        assert mine.__match_args__ == cls.__match_args__  # type: ignore[attr-defined]
        for inner_name, inner in vars(cls).items():
            if isinstance(inner, type) and dataclasses.is_dataclass(inner):
                hoisted = getattr(ours, f"{name}_{inner_name}")
                assert getattr(mine, inner_name) is hoisted
                assert hoisted.__qualname__ == inner.__qualname__ == f"{name}.{inner_name}"
                assert repr(hoisted()) == repr(inner())
                assert "__init__" in vars(hoisted) and "__eq__" in vars(hoisted)
                assert hoisted.__hash__ is None  # unhashable, as the pure build's


def test_the_imported_classes_fields_are_the_structs_own() -> None:
    """On the compiled build (the compiled tier runs this file there) mypyc hands `dataclasses`
    class variables and aliases as annotations; `_mypyc_fields` must leave only the struct's."""
    for cls in MESSAGES.values():
        stem = cls.__module__.rsplit(".", 1)[1]
        ref = getattr(_transformed(stem), cls.__name__)
        names = [f.name for f in dataclasses.fields(cls)]
        assert names == [f.name for f in dataclasses.fields(ref)], cls.__name__
        assert "API_KEY" not in names and cls.__match_args__ == tuple(names)  # type: ignore[attr-defined]
        for inner in vars(ref).values():
            if isinstance(inner, type) and dataclasses.is_dataclass(inner):
                real = getattr(cls, inner.__qualname__.rsplit(".", 1)[1])
                assert [f.name for f in dataclasses.fields(real)] == [
                    f.name for f in dataclasses.fields(inner)
                ]


FAST = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("name", "version"), all_message_versions())
@FAST
@given(data=st.data())
def test_transformed_classes_decode_and_encode_kafkas_bytes_the_same(
    name: str, version: int, data: st.DataObject
) -> None:
    pure_cls = MESSAGES[name]
    stem = pure_cls.__module__.rsplit(".", 1)[1]
    ours_cls: Any = getattr(_transformed(stem), pure_cls.__name__)
    value = data.draw(strategy_for(name, version))
    wire = value.encode(version)
    mine = ours_cls.decode(wire, version)
    assert mine.encode(version) == wire
    theirs = pure_cls.decode(wire, version)
    assert repr(mine) == repr(theirs)
    twin = ours_cls.decode(wire, version)
    assert mine == twin and (mine != twin) is False
    assert (mine == theirs) is False  # another class, as two pure classes would be
    assert dataclasses.replace(mine) == mine
    assert dataclasses.astuple(mine) == dataclasses.astuple(theirs)
    with pytest.raises(TypeError):
        hash(mine)


def test_a_field_with_a_factory_is_fresh_when_not_given_and_may_be_given_none() -> None:
    """A nullable list with a factory: None is a value there, so "not given" is a sentinel."""
    src = (
        "from __future__ import annotations\n\nfrom dataclasses import field\n\n"
        "def _new() -> list[int]:\n    return [7]\n\n"
        "@_codec.struct\nclass M:\n    xs: list[int] | None = field(default_factory=list)\n"
        "    n: int = 0\n    ys: list[int] = field(default_factory=_new)\n"
    )
    out = compiled_structs.transform(src)
    assert "@_mypyc_dataclass\nclass M:" in out and "def __init__" in out
    scope: dict[str, Any] = {}
    exec(compile(out, "t", "exec"), scope)
    m = scope["M"]
    assert m().xs == [] and m(None).xs is None and m().xs is not m().xs
    assert m().ys == [7] and m(ys=[1]).ys == [1] and repr(m()) == "M(xs=[], n=0, ys=[7])"


def test_a_field_it_cannot_write_stops_the_build() -> None:
    src = (
        "from __future__ import annotations\n\nfrom dataclasses import field\n\n"
        "@_codec.struct\nclass M:\n    n: int = field(init=False)\n"
    )
    with pytest.raises(SystemExit, match="cannot write the methods of M"):
        compiled_structs.transform(src)


def test_the_codec_module_keeps_its_run_time_struct() -> None:
    """mypyc compiles only the TYPE_CHECKING side of `_codec.struct` (a `...` body): the copy
    keeps the run-time one, a slotted dataclass that is not frozen."""
    text = (ROOT / "node/metaquorum/protocol/_codec.py").read_text()
    out = compiled_structs.transform_codec(text)
    assert "TYPE_CHECKING:\n\n    @dataclass_transform" not in out
    scope: dict[str, Any] = {"__name__": "metaquorum.protocol._mypyc_codec"}
    exec(compile(out, "_codec.py", "exec"), scope)

    @scope["struct"]
    class S:
        n: int = 0

    s = S(3)
    s.n = 4  # not frozen at run time
    assert dataclasses.is_dataclass(S) and S.__slots__ == ("n",) and s.n == 4
    with pytest.raises(SystemExit):
        compiled_structs.transform_codec(text.replace("if TYPE_CHECKING:", "if False:"))

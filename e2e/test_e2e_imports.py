"""The e2e harness's own shape: its modules import each other without a cycle, none imports
conftest or a test module, none is longer than 400 lines, each opens with a docstring.

Role: keeps issue 34's untangling from growing back. Runs without a cluster (no fixture), so
`e2e/run.sh e2e/test_e2e_imports.py` or plain `pytest e2e/test_e2e_imports.py` checks it in a
second; `make e2e` runs it with the rest of e2e/.

Oracle: the modules' source as `ast` reads it. Every import statement counts, wherever it is
(top level, inside a function, under `if TYPE_CHECKING:`): an import moved into a function or
behind TYPE_CHECKING still ties the two modules together, so it cannot hide a cycle here.
Only imports of e2e's own top-level modules (the directory pytest and the scripts put on
sys.path) are edges; e2e/tools/ is its own directory of modules, checked the same way.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MAX_LINES = 400
# each directory is one flat namespace of modules (it is on sys.path as it is)
DIRS = [HERE, HERE / "tools", HERE / "standin_site"]


def imports_of(path: Path) -> set[str]:
    """Top-level names of every module `path` imports, anywhere in the file."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def import_graph(directory: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same directory it imports."""
    mods = {p.stem: p for p in directory.glob("*.py")}
    return {m: imports_of(p) & mods.keys() for m, p in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, or a module importing
    itself (Tarjan's algorithm; each component sorted, the list sorted)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_cycles_finds_a_cycle_and_a_self_import() -> None:
    """The checker itself: a three-module ring and a self-import are found, a chain is not."""
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(ring) == [["a", "b", "c"], ["e"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


@pytest.mark.parametrize("directory", DIRS, ids=lambda d: d.relative_to(HERE.parent).as_posix())
def test_no_import_cycle(directory: Path) -> None:
    found = cycles(import_graph(directory))
    assert not found, f"import cycles among modules of {directory}: {found}"


def test_no_module_imports_conftest() -> None:
    """conftest.py holds fixtures and hooks only; what tests share lives in plain modules."""
    importers = sorted(m for m, deps in import_graph(HERE).items() if "conftest" in deps)
    assert not importers, f"modules importing conftest: {importers}"


def test_no_module_imports_a_test_module() -> None:
    """A test module is run, not imported: helpers and fixtures two test files share live in a
    plain module (harness.py, quorums.py), so running one file never drags in another's tests'
    module state."""
    graph = import_graph(HERE)
    importers = sorted(
        f"{m} -> {d}" for m, deps in graph.items() for d in deps if d.startswith("test_")
    )
    assert not importers, f"test modules imported as libraries: {importers}"


def test_modules_short_and_documented() -> None:
    files = sorted(p for d in DIRS for p in d.glob("*.py"))
    too_long = {p.name: n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    undocumented = [p.name for p in files if ast.get_docstring(ast.parse(p.read_text())) is None]
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"
    assert not undocumented, f"modules without a docstring: {undocumented}"

"""Every tier under tests/: a run on the compiled build (issue 28; `PYTHONPATH=build/compiled`,
see tests/pure_build.py) must really load the compiled modules, not fall back to the pure-Python
package found further down the path (a stale or half-copied tree): checked once per session."""

from __future__ import annotations

import os

import pytest

from tests.pure_build import is_compiled_tree, is_extension


def pytest_sessionstart(session: pytest.Session) -> None:
    trees = [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
    if not any(is_compiled_tree(e) for e in trees):
        return
    import metaquorum.core.node
    import metaquorum.runtime.driver

    for mod in (metaquorum.core.node, metaquorum.runtime.driver):
        if not is_extension(mod.__file__):
            raise pytest.UsageError(
                f"PYTHONPATH names a compiled build but {mod.__name__} came from {mod.__file__}: "
                "rebuild it (make compiled) or run with BUILD=pure"
            )

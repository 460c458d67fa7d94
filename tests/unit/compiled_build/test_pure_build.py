"""tests/pure_build.py: the environment for a planted bug drops the compiled tree from PYTHONPATH
and keeps everything else (issue 28, round 8)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.pure_build import is_compiled_tree, pure_env


def _tree(root: Path) -> Path:
    (root / "metaquorum").mkdir(parents=True)
    (root / "STAMP").write_text("x\n")
    return root


def test_the_compiled_tree_is_dropped_and_the_rest_kept(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "compiled")
    other = tmp_path / "mutation"
    other.mkdir()
    path = os.pathsep.join([str(other), str(tree), "/x"])
    env = {"PYTHONPATH": path, "HOME": "/h"}
    assert pure_env(env) == {"PYTHONPATH": os.pathsep.join([str(other), "/x"]), "HOME": "/h"}
    assert env["PYTHONPATH"] == path  # the caller's mapping is not changed


def test_only_a_directory_with_a_stamp_and_a_package_is_a_compiled_tree(tmp_path: Path) -> None:
    assert is_compiled_tree(str(_tree(tmp_path / "c")))
    (tmp_path / "no-stamp" / "metaquorum").mkdir(parents=True)
    assert not is_compiled_tree(str(tmp_path / "no-stamp"))
    assert not is_compiled_tree(str(tmp_path / "missing"))


def test_without_a_compiled_tree_nothing_changes(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "c")
    assert pure_env({"A": "1"}) == {"A": "1"}
    assert pure_env({"PYTHONPATH": "/a"}) == {"PYTHONPATH": "/a"}
    assert pure_env({"PYTHONPATH": str(tree), "A": "1"}) == {"A": "1"}


def test_an_extension_module_is_told_from_a_source_file() -> None:
    from tests.pure_build import is_extension

    assert is_extension("/b/metaquorum/core/node.cpython-311-x86_64-linux-gnu.so")
    assert not is_extension("/s/metaquorum/core/node.py")
    assert not is_extension(None)

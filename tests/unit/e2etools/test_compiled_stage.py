"""e2e/tools/compiled_stage.py: the node image's compiled build in the scripted image build
(issue 28): which Dockerfile builds one, and the refusal of a venv of another CPython."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "e2e" / "tools"))
import compiled_stage  # noqa: E402
from dockerfile import DockerfileError, parse, parse_file  # noqa: E402


def test_the_node_image_builds_the_compiled_tree_and_the_operator_image_does_not() -> None:
    assert compiled_stage.compiled_out(parse_file(ROOT / "node" / "Dockerfile")[0]) == "compiled"
    assert compiled_stage.compiled_out(parse_file(ROOT / "operator" / "Dockerfile")[0]) is None


def test_the_final_stage_lays_over_what_the_build_stage_compiled() -> None:
    """The final stage copies the extension modules from the directory the build stage names
    and refuses an image where one does not import as compiled."""
    stages = parse_file(ROOT / "node" / "Dockerfile")
    runs = " ".join(i.value for i in stages[-1].ops("RUN"))
    assert f"cd /wheels/{compiled_stage.compiled_out(stages[0])} " in runs
    assert 'endswith(".so")' in runs


def test_another_stage_text_names_its_directory() -> None:
    (stage,) = parse(
        "FROM debian:bookworm-slim AS build\nRUN x scripts/build_compiled.py --out /wheels/c2\n"
    )
    assert compiled_stage.compiled_out(stage) == "c2"


def test_a_venv_of_another_cpython_is_refused_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    py = tmp_path / ".venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text("#!/bin/sh\necho .cpython-312-x86_64-linux-gnu.so\n")
    py.chmod(0o755)
    monkeypatch.setattr(compiled_stage, "ROOT", tmp_path)
    with pytest.raises(
        DockerfileError, match=r"CPython 3\.11.*make setup PYTHON=/usr/bin/python3\.11"
    ):
        compiled_stage.build_python()

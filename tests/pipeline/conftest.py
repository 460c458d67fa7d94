"""Fixtures of the pipeline tier: one real Spark session on local[2] per test session, and a
helper that runs the `metaquorum-pipeline` command in a fresh process, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

SPARK_CLI_TIMEOUT_S = 300


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from metaquorum_pipeline import sparkjob

    session = sparkjob.session("local[2]", "metaquorum-pipeline-tests")
    yield session
    session.stop()


def write_spec(path: Path, **spec: Any) -> Path:
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run_cli(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "metaquorum_pipeline", *map(str, args)],
        capture_output=True,
        text=True,
        env=dict(os.environ, **(env or {})),
        timeout=SPARK_CLI_TIMEOUT_S,
        check=False,
    )

"""The broken builds' patch layers (e2e/broken_image.py) still fit the product they patch (pure,
no cluster): each is executed against the real modules and the function it replaces must
accept every argument the product passes to the original. The planner's `_plan` grew a
`nodes` argument after the two-at-once operator was written; its patch took four and raised
TypeError on every reconcile, so the broken operator never deleted anything and could not be
caught (k8s_broken_operator_check.py had never run on a cluster). The node image runs the
compiled build (issue 28), past which a replaced function is never called: the broken node's
patch must load the pure package first, checked here against the compiled tree itself."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broken_image import NODE_ACK_BEFORE_MAJORITY, OPERATOR_TWO_AT_ONCE

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def restore() -> Iterator[None]:
    import metaquorum.core.high_watermark as hwm
    from metaquorum_operator import kube, planner

    saved = (planner._plan, kube.Kube.execute, hwm.compute_high_watermark)
    finders = list(sys.meta_path)  # the node patch adds one (the pure package first)
    try:
        yield
    finally:
        planner._plan, kube.Kube.execute, hwm.compute_high_watermark = saved
        sys.meta_path[:] = finders


def _fits(original: Any, patched: Any) -> None:
    assert patched is not original, "the patch replaced nothing"
    n = len(inspect.signature(original).parameters)
    inspect.signature(patched).bind(*range(n))  # TypeError: the patch no longer fits


def test_the_two_at_once_operator_patch_fits_the_planner_and_executor(restore: None) -> None:
    from metaquorum_operator import kube, planner

    plan, execute = planner._plan, kube.Kube.execute
    exec(compile(OPERATOR_TWO_AT_ONCE, "broken-operator", "exec"), {})
    _fits(plan, planner._plan)
    _fits(execute, kube.Kube.execute)


def test_the_ack_before_majority_node_patch_fits_the_high_watermark(restore: None) -> None:
    import metaquorum.core.high_watermark as hwm

    original = hwm.compute_high_watermark
    exec(compile(NODE_ACK_BEFORE_MAJORITY, "broken-node", "exec"), {})
    _fits(original, hwm.compute_high_watermark)
    # and it is broken: one voter's offset alone moves the HW
    assert hwm.compute_high_watermark({0: 10, 1: None, 2: None}, 0, 0) == 10
    assert original({0: 10, 1: None, 2: None}, 0, 0) != 10


WHERE = (
    "import metaquorum.core.node as n, metaquorum.core.high_watermark as h\n"
    "print(n.__file__, h.__file__, h.compute_high_watermark.__module__)"
)


def test_the_broken_node_runs_the_pure_package_over_the_compiled_build() -> None:
    # the repository's compiled tree (built when stale, ~4.5 min; the node image needs it too)
    tree = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_compiled.py")],
        check=True,
        capture_output=True,
        text=True,
        timeout=1200,
    ).stdout.strip()
    env = {**os.environ, "PYTHONPATH": tree}

    def files(code: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd="/", check=True, capture_output=True,
            text=True, timeout=60,
        ).stdout  # fmt: skip
        return out.split()

    node, hwm, _ = files(WHERE)
    assert node.endswith(".so") and hwm.endswith(".so"), "the tree is the compiled build"
    node, hwm, patched_in = files(NODE_ACK_BEFORE_MAJORITY + "\n" + WHERE)
    assert node.endswith("/core/node.py") and hwm.endswith("/core/high_watermark.py")
    assert patched_in == "__main__", "the broken function replaced the compiled one"

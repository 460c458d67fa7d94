"""The broken builds' patch layers (e2e/broken_image.py) still fit the product they patch (pure,
no cluster): each is executed against the real modules and the function it replaces must
accept every argument the product passes to the original. The planner's `_plan` grew a
`nodes` argument after the two-at-once operator was written; its patch took four and raised
TypeError on every reconcile, so the broken operator never deleted anything and could not be
caught (k8s_broken_operator_check.py had never run on a cluster)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from broken_image import NODE_ACK_BEFORE_MAJORITY, OPERATOR_TWO_AT_ONCE


@pytest.fixture
def restore() -> Iterator[None]:
    import metaquorum.core.high_watermark as hwm
    from metaquorum_operator import kube, planner

    saved = (planner._plan, kube.Kube.execute, hwm.compute_high_watermark)
    try:
        yield
    finally:
        planner._plan, kube.Kube.execute, hwm.compute_high_watermark = saved


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

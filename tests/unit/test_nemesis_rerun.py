"""The nemesis's re-run line reproduces the run's fault kinds (tests/nemesis/run.py).

CI's 303cd failure (2026-11-29) printed `--dynamic` without `--kinds` for the test's
`KINDS` on a dynamic quorum; the CLI then added remove-controller to the schedule, so the line
re-ran a different schedule than the one that failed."""

from __future__ import annotations

import shlex

import pytest

from tests.nemesis.nemesis import DYNAMIC_KINDS, KINDS
from tests.nemesis.run import cli_kinds, rerun_command


def _kinds_of(command: str) -> tuple[str, ...]:
    args = shlex.split(command)
    given = args[args.index("--kinds") + 1] if "--kinds" in args else None
    return cli_kinds(given, "--dynamic" in args)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize(
    "kinds",
    [KINDS, KINDS + tuple(k for k in DYNAMIC_KINDS if k not in KINDS), ("kill", "pause")],
    ids=["default", "with-dynamic", "two"],
)
def test_the_rerun_line_names_the_same_kinds(kinds: tuple[str, ...], dynamic: bool) -> None:
    command = rerun_command(303, 40.0, kinds, None, None, True, dynamic)
    assert _kinds_of(command) == kinds, command


def test_the_cli_defaults() -> None:
    assert cli_kinds(None, False) == KINDS
    assert set(cli_kinds(None, True)) == set(KINDS) | set(DYNAMIC_KINDS)
    assert cli_kinds(",".join(KINDS), True) == KINDS  # --kinds is exact
    assert set(cli_kinds("kill", True, mix=True)) == {"kill", *DYNAMIC_KINDS}  # a campaign's

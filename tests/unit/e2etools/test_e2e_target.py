"""Which target `make e2e` runs: the real kubelet where containers can run, else the stand-in.

e2e/run.sh asks e2e/tools/container-host.sh; here as an unprivileged user (setpriv, so the test
itself needs root, which the e2e and nemesis tiers need anyway), where containers cannot run:
the check names the reason, an unset E2E_CLUSTER falls back to the stand-in saying why, and an
explicit E2E_CLUSTER=local fails with that reason instead. The two scripts run from a copy in a
directory that user can read (a clone may sit under /root); nothing is built: the copy has no
build scripts, so the fallback run stops at its first build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="runs the scripts as another user (setpriv, root)",
)


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    """e2e/run.sh and container-host.sh where uid 65534 can read them, a stub .venv/bin/pytest."""
    d = Path(tempfile.mkdtemp(prefix="mq-e2e-target-", dir="/tmp"))
    try:
        (d / "e2e" / "tools").mkdir(parents=True)
        (d / ".venv" / "bin").mkdir(parents=True)
        shutil.copy(ROOT / "e2e" / "run.sh", d / "e2e" / "run.sh")
        shutil.copy(ROOT / "e2e" / "tools" / "container-host.sh", d / "e2e" / "tools")
        stub = d / ".venv" / "bin" / "pytest"
        stub.write_text("#!/bin/sh\nexit 99\n")
        for p in [d, *d.rglob("*")]:
            p.chmod(0o755)
        yield d
    finally:
        shutil.rmtree(d)


def as_nobody(tree: Path, *cmd: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "HOME": "/nonexistent"}
    return subprocess.run(
        [*NOBODY, *cmd],
        cwd=tree,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_check_names_why_containers_cannot_run(tree: Path) -> None:
    out = as_nobody(tree, "bash", "e2e/tools/container-host.sh", "check")
    assert out.returncode == 1
    assert out.stdout.strip() == "not root (containerd, runc and the network namespace need it)"


def test_unset_target_falls_back_to_the_stand_in_and_says_why(tree: Path) -> None:
    out = as_nobody(tree, "bash", "e2e/run.sh", METAQUORUM_CACHE="/nonexistent/cache")
    assert (
        "=== e2e: real containers cannot run here (not root (containerd, runc and the network "
        "namespace need it)): the kubelet stand-in runs the suite" in out.stdout
    ), out.stdout + out.stderr
    assert "=== e2e: target stand-in" in out.stdout


def test_an_explicit_local_target_fails_with_the_reason(tree: Path) -> None:
    for name in ("local", "local-kubelet"):  # the old name means the same
        out = as_nobody(tree, "bash", "e2e/run.sh", E2E_CLUSTER=name)
        assert out.returncode == 1
        assert out.stderr.strip() == (
            "tier e2e: FAILED: E2E_CLUSTER=local cannot run here: not root (containerd, runc and"
            " the network namespace need it) (E2E_CLUSTER=stand-in runs without containers)"
        )

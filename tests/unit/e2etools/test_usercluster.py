"""e2e/usercluster.py (`make cluster`): its bad input, one line each, without starting a cluster.

A foreign network namespace of the cluster's name is refused and left alone; a half-started
earlier run is refused by `up` and cleaned by `down`, whose stale pid file (a live process
that is not the cluster's) is never signalled; not root is one line. Needs root (network
namespaces); under 10 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOOL = [sys.executable, str(ROOT / "e2e" / "usercluster.py")]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def run(state: Path, netns: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MQ_CLUSTER_STATE": str(state), "MQ_CLUSTER_NETNS": netns}
    return subprocess.run(
        [*TOOL, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_foreign_netns_is_refused_and_left_alone(tmp_path: Path) -> None:
    netns = f"mq-test-foreign-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    try:
        up = run(tmp_path / "state", netns, "up")
        assert up.returncode == 1
        assert up.stderr.count("\n") == 1, up.stderr
        assert f"network namespace {netns} exists but was not made by make cluster" in up.stderr
        assert f"ip netns del {netns}" in up.stderr
        down = run(tmp_path / "state", netns, "down")
        assert down.returncode == 1 and "left alone" in down.stderr
        assert (Path("/run/netns") / netns).exists()
        assert not (tmp_path / "state").exists()
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False)


def test_half_started_run_is_refused_then_cleaned(tmp_path: Path) -> None:
    state, netns = tmp_path / "state", f"mq-test-half-{os.getpid()}"
    state.mkdir()
    (state / "netns").write_text(netns)
    subprocess.run(["ip", "netns", "add", netns], check=True)
    stranger = subprocess.Popen(["sleep", "60"])  # a pid file naming a process not ours
    (state / "kube-apiserver.pid").write_text(str(stranger.pid))
    (state / "kube-apiserver.log").write_text("crashed\n")
    try:
        up = run(state, netns, "up")
        assert up.returncode == 1
        assert up.stderr.count("\n") == 1, up.stderr
        assert "half-started" in up.stderr and "make cluster-down" in up.stderr
        st = run(state, netns, "status")
        assert st.returncode == 1 and "cluster: half" in st.stdout
        assert "NOT RUNNING" in st.stdout
        down = run(state, netns, "down")
        assert down.returncode == 0, down.stderr
        assert not state.exists()
        assert not (Path("/run/netns") / netns).exists()
        assert stranger.poll() is None, "down signalled a process that was not the cluster's"
        assert "cluster: down" in run(state, netns, "status").stdout
        again = run(state, netns, "down")
        assert again.returncode == 0 and "nothing to do" in again.stdout
    finally:
        stranger.kill()
        subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)


def test_not_root_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.path.insert(0, str(ROOT / "e2e"))
    import usercluster

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for action, what in (("up", "make cluster"), ("down", "make cluster-down")):
        assert usercluster.main([action]) == 1
        assert capsys.readouterr().err == (
            f"{what}: needs root (containerd, runc, network namespaces): run it as root\n"
        )
        assert usercluster.main(["--kind", action]) == 1
        assert capsys.readouterr().err == (
            f"{what} KIND=1: needs root (make images builds the images with chroot, and kind "
            "drives the runtime as root): run it as root\n"
        )


def test_shell_without_cluster_says_make_cluster(tmp_path: Path) -> None:
    proc = run(tmp_path / "state", f"mq-test-none-{os.getpid()}", "shell")
    assert proc.returncode == 1
    assert "no cluster is up: run `make cluster` first" in proc.stderr
    # `make cluster-shell CMD='kubectl run --rm -i ... -- metaquorum ...'`: the command's own
    # options are the command's, not the tool's (argparse refused them before)
    cmd = ["kubectl", "run", "x", "--rm", "-i", "--image", "i", "--", "metaquorum", "--version"]
    proc = run(tmp_path / "state", f"mq-test-none-{os.getpid()}", "shell", *cmd)
    assert proc.returncode == 1
    assert "no cluster is up" in proc.stderr, proc.stderr

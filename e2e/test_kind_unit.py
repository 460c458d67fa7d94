"""The kind fixture's command sequence, with stand-in `kind` and `docker` executables.

No container runtime exists here, so this checks what E2E_CLUSTER=kind would run: create the
cluster into its own kubeconfig, build both images from their Dockerfiles at the repository
root, load them, and delete the cluster on exit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from kindcluster import IMAGES, NAME, kind_cluster

FAKE = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
if [ "$1 $2" = "create cluster" ]; then
  while [ $# -gt 0 ]; do
    if [ "$1" = "--kubeconfig" ]; then
      cat > "$2" <<KCFG
apiVersion: v1
kind: Config
clusters: [{{name: k, cluster: {{server: "https://127.0.0.1:1"}}}}]
users: [{{name: k, user: {{token: t}}}}]
contexts: [{{name: k, context: {{cluster: k, user: k}}}}]
current-context: k
KCFG
    fi
    shift
  done
fi
"""


def test_kind_fixture_runs_create_build_load_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    for tool in ("kind", "docker"):
        exe = tmp_path / tool
        exe.write_text(FAKE.format(log=log))
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("E2E_KEEP", raising=False)
    with kind_cluster(tmp_path) as c:
        assert c.kind == "kind" and c.kubeconfig.exists()
        assert c.placeholder == ["python3", "/opt/metaquorum/placeholder_node.py"]
    calls = log.read_text().splitlines()
    assert calls[0].startswith(f"kind create cluster --name {NAME} --kubeconfig ")
    for tag, dockerfile in IMAGES.items():
        assert f"docker build -t {tag} -f {dockerfile} ." in calls
        assert f"kind load docker-image {tag} --name {NAME}" in calls
    assert calls[-1] == f"kind delete cluster --name {NAME}"
    root = Path(__file__).resolve().parents[1]
    assert all((root / d).is_file() for d in IMAGES.values())

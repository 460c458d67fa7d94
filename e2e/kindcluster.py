"""The e2e cluster where a container runtime exists: kind (E2E_CLUSTER=kind).

Role: create a kind cluster, build the node and operator images from node/Dockerfile and
operator/Dockerfile, load them into the cluster and hand the suite a `Cluster` like the local
one (no kubelet stand-in: its fault tests skip). Needs `kind` and `docker` on PATH; this
project's development machines have no container runtime, so this path is exercised only where
one exists (docs/e2e.md).
Invariant: the cluster is deleted on exit unless E2E_KEEP=1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from harness import Cluster
from kubernetes import config

ROOT = Path(__file__).resolve().parents[1]
NAME = "metaquorum-e2e"
IMAGES = {
    "metaquorum/node:e2e": "node/Dockerfile",
    "metaquorum/operator:e2e": "operator/Dockerfile",
}


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, cwd=ROOT)


@contextlib.contextmanager
def kind_cluster(clients_bin: Path) -> Iterator[Cluster]:
    for tool in ("kind", "docker"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"E2E_CLUSTER=kind needs {tool} on PATH")
    kubeconfig = Path(tempfile.mkdtemp(prefix="metaquorum-kind-")) / "kubeconfig"
    _run(
        "kind",
        "create",
        "cluster",
        "--name",
        NAME,
        "--kubeconfig",
        str(kubeconfig),
        "--wait",
        "120s",
    )
    try:
        for tag, dockerfile in IMAGES.items():
            _run("docker", "build", "-t", tag, "-f", dockerfile, ".")
            _run("kind", "load", "docker-image", tag, "--name", NAME)
        api = config.new_client_from_config(str(kubeconfig))
        yield Cluster(
            "kind",
            kubeconfig,
            clients_bin,
            api,
            placeholder=["python3", "/opt/metaquorum/placeholder_node.py"],
        )
    finally:
        if os.environ.get("E2E_KEEP") != "1":
            subprocess.run(["kind", "delete", "cluster", "--name", NAME], check=False)

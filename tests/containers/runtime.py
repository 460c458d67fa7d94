"""Helpers of the containers tier: a standalone node's files, free ports, a quorum query.

The node in a container is configured the way a user would: a `server.properties` on a
read-only bind mount at /etc/metaquorum, its data on a bind-mounted volume under the image's
workdir (owned by the image's non-root user, as an fsGroup would make it), formatted
`--standalone` and started by `sh -c` as the container's process.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

from tests.containers.images import ROOT

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
DATA = "/var/lib/metaquorum/data"
START = (
    f"metaquorum storage format --config /etc/metaquorum/server.properties "
    f"--cluster-id {CLUSTER_ID} --standalone --ignore-formatted "
    f"&& exec metaquorum server start --config /etc/metaquorum/server.properties"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_files(base: Path, uid: int) -> tuple[Path, Path, int, int]:
    """(config dir, data dir, controller port, http port) for a standalone node on loopback."""
    port, http = free_port(), free_port()
    conf, data = base / "conf", base / "data"
    conf.mkdir(parents=True)
    data.mkdir()
    os.chown(data, uid, uid)
    (conf / "server.properties").write_text(
        "node.id=1\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.quorum.bootstrap.servers=127.0.0.1:{port}\n"
        f"metadata.log.dir={DATA}/log\nmetaquorum.http.listener=127.0.0.1:{http}\n"
    )
    return conf, data, port, http


def describe(port: int, timeout: float = 60.0) -> str:
    """`metaquorum quorum describe --status` from the host until it names leader 1."""
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(
            [str(ROOT / ".venv/bin/metaquorum"), "quorum", "--bootstrap-controller",
             f"127.0.0.1:{port}", "--timeout", "5", "describe", "--status"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        out = proc.stdout + proc.stderr
        if proc.returncode == 0 and re.search(r"^LeaderId:\s+1$", out, re.M):
            return out
        time.sleep(0.5)
    raise AssertionError(f"no leader from 127.0.0.1:{port} in {timeout:.0f}s: {out}")


def uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid line for pid {pid}")

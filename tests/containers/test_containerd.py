"""The node image imported into containerd (Debian's package, own config/state/socket under the
test's directory) and run with `ctr run`: the image's user and command come from its config.

Checks: `ctr images import` of the built archive names the image as the operator's default
(docker.io/metaquorum/node:<version>); the task runs as uid 1000 without the test saying so; the
node formats its bind-mounted volume and answers DescribeQuorum on the host's network; after
`stop()` no process of this containerd is left (containerd, shims, the node) and nothing stays
mounted under its directory.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.containers.images import ROOT, Image
from tests.containers.runtime import DATA, START, describe, node_files, uid_of

sys.path.insert(0, str(ROOT / "e2e"))
from containerd import Containerd, _our_shims
from controlplane import mounts_under

pytestmark = pytest.mark.containers


def test_node_image_in_containerd(images: dict[str, Image], tmp_path: Path) -> None:
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"mq-ctrd-{os.getpid()}"
    c = Containerd(root)
    try:
        started = c.start()
        print(f"containerd answered in {started:.1f}s")
        t0 = time.monotonic()
        names = c.import_image(images["node"].archive, namespace="mqtest")
        print(f"node image imported in {time.monotonic() - t0:.1f}s")
        assert images["node"].ref in names
        conf, data, port, _ = node_files(tmp_path, 1000)
        c.ctr(
            "run", "--detach", "--net-host",
            "--mount", f"type=bind,src={conf},dst=/etc/metaquorum,options=rbind:ro",
            "--mount", f"type=bind,src={data},dst={DATA},options=rbind:rw",
            images["node"].ref, "mq-node", "sh", "-c", START,
            namespace="mqtest",
        )  # fmt: skip
        t0 = time.monotonic()
        describe(port)
        print(f"containerd: leader elected {time.monotonic() - t0:.1f}s after ctr run")
        rows = c.ctr("tasks", "ls", namespace="mqtest").stdout.splitlines()[1:]
        (task,) = [r.split() for r in rows]
        assert task[0] == "mq-node" and task[2] == "RUNNING", rows
        assert uid_of(int(task[1])) == 1000, "the image's USER, not root"
        assert {p.stat().st_uid for p in (data / "log").rglob("*")} == {1000}
        assert _our_shims(c.address), "a shim serves the task"
        pid = c.proc.pid if c.proc else -1
    finally:
        c.stop()
    assert not _our_shims(c.address), "no shim of ours is left"
    assert not Path(f"/proc/{pid}").exists(), "containerd is stopped"
    assert not Path(f"/proc/{task[1]}").exists(), "the node's process is gone"
    assert not mounts_under(root)
    assert not list(Path("/sys/fs/cgroup").glob("*/mqtest")), "its cgroups are removed"
    shutil.rmtree(root)

"""`make cluster KIND=1` where no image registry is reachable: real kind, real Podman, one line.

kind (built from the Go module proxy by e2e/tools/build-kind.sh, cached) with Podman (Debian's
package) needs its node image, kindest/node, which only a registry has. Run as a user types it,
`make cluster KIND=1` must refuse with one line naming the image, the cause (the oracle is
Podman itself: the last causes of `podman pull` of the same reference, run first) and the two
fixes (an archive via KIND_NODE_IMAGE_ARCHIVE, or `make cluster` without KIND=1), exit non-zero,
and leave nothing: Podman's images, containers, networks and volumes as before, no kind
cluster of that name, no state dir. Where the pull succeeds (a registry is reachable) the
refusal cannot happen and the test skips saying so. Root; about 10 s once kind is cached
(its first build about 1 min).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.containers.images import ROOT

sys.path.insert(0, str(ROOT / "e2e"))
import userkind

pytestmark = pytest.mark.containers


def podman_state() -> dict[str, list[str]]:
    out = {}
    for what in (["images", "-a"], ["ps", "-a"], ["network", "ls"], ["volume", "ls"]):
        proc = subprocess.run(["podman", *what, "--format", "{{.ID}}"], capture_output=True,
                              text=True, check=True)  # fmt: skip
        out[what[0]] = sorted(proc.stdout.split())
    return out


def test_make_cluster_kind_refuses_in_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("the containers tier needs root")
    if not shutil.which("podman"):
        subprocess.run(
            [str(ROOT / "scripts" / "apt-install.sh"), "--no-install-recommends", "podman"],
            check=True,
        )
    kind = Path(userkind.kind_binary())  # build-kind.sh, cached
    image = userkind.DEFAULT_NODE_IMAGES[userkind.KIND_VERSION]
    ref = userkind.runtime_ref("podman", image)
    inspect = ["podman", "image", "inspect", ref]
    if subprocess.run(inspect, capture_output=True, check=False).returncode == 0:
        pytest.skip(f"{ref} is in Podman's store: make cluster KIND=1 would create a cluster")
    pull = subprocess.run(["podman", "pull", ref], capture_output=True, text=True, check=False)
    if pull.returncode == 0:
        pytest.skip(f"a registry is reachable ({ref} pulled): the refusal cannot happen here")
    cause = userkind._last_line(pull.stderr)
    name = f"mq-refusal-{os.getpid()}"
    env = {**os.environ, "MQ_KIND_NAME": name, "MQ_KIND_STATE": str(tmp_path / "state"),
           "KIND_EXPERIMENTAL_PROVIDER": "podman"}  # fmt: skip
    for var in ("KIND_NODE_IMAGE", "KIND_NODE_IMAGE_ARCHIVE", "KIND_BIN"):
        env.pop(var, None)
    before = podman_state()
    proc = subprocess.run(["make", "-s", "cluster", "KIND=1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert proc.returncode != 0
    ours = [ln for ln in proc.stderr.splitlines() if not ln.startswith("make: ***")]
    assert len(ours) == 1, proc.stderr
    line = ours[0]
    assert line.startswith(
        "make cluster KIND=1: kind's node image kindest/node:v1.34.0 is not in podman's store "
        f"and cannot be pulled ({cause}): provide it as an archive (KIND_NODE_IMAGE_ARCHIVE="
    ), line
    assert line.endswith("or use `make cluster` without KIND=1 (the same Kubernetes, no "
                         "registry needed)"), line  # fmt: skip
    assert podman_state() == before
    clusters = subprocess.run([str(kind), "get", "clusters"], env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
    assert name not in clusters.stdout.split()
    assert not (tmp_path / "state").exists()


@pytest.mark.timeout(1800)  # dist_images.py waits for the image cache's lock other builds hold
def test_a_failed_kind_create_from_an_archive_leaves_nothing(tmp_path: Path) -> None:
    """KIND_NODE_IMAGE_ARCHIVE loaded by the real Podman; `kind create cluster` from an image that
    is no kind node image fails (here: Podman cannot mount /lib/modules, which this machine
    lacks; elsewhere the node never boots), and the tool removes what kind leaves of it: its
    volume and the `kind` network it made. Only the image loaded from the archive stays (the
    user's load), removed here by the test."""
    if os.geteuid() != 0 or not shutil.which("podman"):
        pytest.fail("the containers tier needs root and Podman (the test above installs it)")
    subprocess.run([sys.executable, str(ROOT / "e2e" / "tools" / "dist_images.py")], check=True)
    node = next(i for i in json.loads((ROOT / "dist" / "images.json").read_text())
                if i["name"] == "node")  # fmt: skip
    name = f"mq-failed-{os.getpid()}"
    env = {**os.environ, "MQ_KIND_NAME": name, "MQ_KIND_STATE": str(tmp_path / "state"),
           "KIND_EXPERIMENTAL_PROVIDER": "podman", "KIND_NODE_IMAGE": node["ref"],
           "KIND_NODE_IMAGE_ARCHIVE": str(ROOT / "dist" / node["archive"])}  # fmt: skip
    had_image = subprocess.run(["podman", "image", "inspect", node["ref"]], capture_output=True,
                               check=False).returncode == 0  # fmt: skip
    before = podman_state()
    try:
        proc = subprocess.run(["make", "-s", "cluster", "KIND=1"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
        assert proc.returncode != 0
        ours = [ln for ln in proc.stderr.splitlines() if not ln.startswith("make: ***")]
        assert ours[-1].startswith("make cluster KIND=1: kind create cluster failed"), proc.stderr
        assert f'Creating cluster "{name}"' in proc.stderr + proc.stdout
        after = podman_state()
        assert {k: v for k, v in after.items() if k != "images"} == {
            k: v for k, v in before.items() if k != "images"
        }, proc.stderr
        clusters = subprocess.run([userkind.kind_binary(), "get", "clusters"], env=env,
                                  capture_output=True, text=True, check=True)  # fmt: skip
        assert name not in clusters.stdout.split()
        assert not (tmp_path / "state").exists()
    finally:
        if not had_image:
            subprocess.run(["podman", "rmi", node["ref"]], capture_output=True, check=False)

"""A deliberately broken node image, for the e2e nemesis to show it is caught (test-only).

Role: `broken_node_image(cluster, archive)` takes the node image's OCI archive (what
e2e/tools/build-images.sh built and the cluster imported), adds one layer with a `.pth` file and
a module in the venv's site-packages that patch the node at interpreter start, and imports the
result into the cluster's containerd as `docker.io/metaquorum/node:e2e-broken-ack`. The patch is
the process nemesis's `ack-before-majority` (tests/nemesis/node_shim.py): the leader's high
watermark is its own flushed end offset, so a Produce is acknowledged before any follower has
it. A MetadataQuorum whose `spec.image` names it runs that build.

Invariants: the product cannot turn this on: nothing in the node, the operator, the chart or
the CRD knows of it; it exists only in an image this module makes, and only inside the test
cluster's containerd. The image is the real one plus that layer, nothing else changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness import Cluster

BROKEN_REF = "docker.io/metaquorum/node:e2e-broken-ack"
SITE = "/opt/metaquorum/venv/lib/python3.11/site-packages"
PATCH = '''"""Test-only (e2e/broken_image.py): the HW is the leader's own flushed offset."""
import metaquorum.core.high_watermark as hwm


def _own_offset_is_committed(voter_offsets, epoch_start_offset, current):
    best = max((-1 if o is None else o for o in voter_offsets.values()), default=-1)
    if best <= epoch_start_offset or (current is not None and best <= current):
        return current
    return best


hwm.compute_high_watermark = _own_offset_is_committed
'''


def _run(*argv: str | Path) -> None:
    subprocess.run([str(a) for a in argv], check=True, capture_output=True, timeout=300)


def broken_node_image(cluster: Cluster, archive: Path) -> str:
    """Build and import the broken image; returns its reference (`spec.image`)."""
    with tempfile.TemporaryDirectory(prefix="mq-broken-image-") as tmp:
        work = Path(tmp)
        layout = work / "oci"
        layout.mkdir()
        _run("tar", "-C", layout, "-xf", archive)
        index = json.loads((layout / "index.json").read_text())
        tag = index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
        (work / "mq_test_broken_ack.py").write_text(PATCH)
        (work / "mq_test_broken_ack.pth").write_text("import mq_test_broken_ack\n")
        for name in ("mq_test_broken_ack.py", "mq_test_broken_ack.pth"):
            _run("umoci", "insert", "--image", f"{layout}:{tag}", work / name, f"{SITE}/{name}")
        index = json.loads((layout / "index.json").read_text())
        for m in index["manifests"]:
            m.setdefault("annotations", {})["io.containerd.image.name"] = BROKEN_REF
        (layout / "index.json").write_text(json.dumps(index))
        _run("tar", "-C", layout, "-cf", work / "image.tar", ".")
        shutil.rmtree(layout)
        cluster.containerd.import_image(work / "image.tar")
    return BROKEN_REF

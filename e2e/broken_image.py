"""Deliberately broken images, for the e2e nemesis to show each is caught (test-only).

Role: `broken_image(cluster, archive, ref, patch)` takes an image's OCI archive (what
e2e/tools/build-images.sh built and the cluster imported), adds one layer with a `.pth` file and
a module in the venv's site-packages that patch the program at interpreter start, and imports
the result into the cluster's containerd as `ref`. Two patches:
- `NODE_ACK_BEFORE_MAJORITY` (`docker.io/metaquorum/node:e2e-broken-ack`): the process
  nemesis's `ack-before-majority` (tests/nemesis/node_shim.py): the leader's high watermark is
  its own flushed end offset, so a Produce is acknowledged before any follower has it. A
  MetadataQuorum whose `spec.image` names it runs that build.
- `OPERATOR_TWO_AT_ONCE` (`docker.io/metaquorum/operator:e2e-broken-two`): when the operator
  deletes a follower's pod in a roll it also deletes the other follower's (two of three voters
  taken down at once, the leader left alone with no majority).

Invariants: the product cannot turn these on: nothing in the node, the operator, the chart or
the CRD knows of them; they exist only in images this module makes, and only inside the test
cluster's containerd. Each image is the real one plus that layer, nothing else changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness import HERE, Cluster

NODE_BROKEN_REF = "docker.io/metaquorum/node:e2e-broken-ack"
OPERATOR_BROKEN_REF = "docker.io/metaquorum/operator:e2e-broken-two"
SITE = "/opt/metaquorum/venv/lib/python3.11/site-packages"
# The node image runs the compiled build, whose modules call each other directly, past a replaced
# module attribute: the broken node first makes `metaquorum` load from its .py files (the pure
# package, which the image keeps beside the extension modules), then replaces the function.
PURE_METAQUORUM = """
import importlib.machinery as _m
import sys as _sys

_pure = _m.FileFinder.path_hook((_m.SourceFileLoader, _m.SOURCE_SUFFIXES))


class _PureMetaquorum:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "metaquorum" and not name.startswith("metaquorum."):
            return None
        for entry in _sys.path if path is None else path:
            try:
                spec = _pure(entry or ".").find_spec(name)
            except ImportError:
                continue
            if spec is not None and spec.loader is not None:
                return spec
        return None


_sys.meta_path.insert(0, _PureMetaquorum)
"""
NODE_ACK_BEFORE_MAJORITY = (
    '''"""Test-only (e2e/broken_image.py): HW = the leader's own offset, on the pure package."""'''
    + PURE_METAQUORUM
    + """
import metaquorum.core.high_watermark as hwm


def _own_offset_is_committed(voter_offsets, epoch_start_offset, current):
    best = max((-1 if o is None else o for o in voter_offsets.values()), default=-1)
    if best <= epoch_start_offset or (current is not None and best <= current):
        return current
    return best


hwm.compute_high_watermark = _own_offset_is_committed
"""
)
OPERATOR_TWO_AT_ONCE = '''"""Test-only (e2e/broken_image.py): a roll deletes 2 followers at once."""
import metaquorum_operator.kube as kube
import metaquorum_operator.planner as planner
from metaquorum_operator.actions import DeletePod

_plan = planner._plan
_execute = kube.Kube.execute
_also: dict = {}


def _plan_two(desired, observed, quorum, *rest):
    action = _plan(desired, observed, quorum, *rest)
    if isinstance(action, DeletePod) and quorum is not None:
        others = [
            p.name
            for p in observed.pods
            if p.name != action.name and p.ordinal != quorum.leader_id and not p.terminating
        ]
        if others:
            _also[action.name] = others[0]
    return action


def _execute_two(self, action, names):
    _execute(self, action, names)
    if isinstance(action, DeletePod) and action.name in _also:
        try:
            self.core.delete_namespaced_pod(_also.pop(action.name), names.namespace)
        except Exception:
            pass


planner._plan = _plan_two
kube.Kube.execute = _execute_two
'''


def _run(*argv: str | Path) -> None:
    subprocess.run([str(a) for a in argv], check=True, capture_output=True, timeout=300)


def broken_image(cluster: Cluster, archive: Path, ref: str, patch: str) -> str:
    """Build and import a broken image; returns its reference."""
    with tempfile.TemporaryDirectory(prefix="mq-broken-image-") as tmp:
        work = Path(tmp)
        layout = work / "oci"
        layout.mkdir()
        _run("tar", "-C", layout, "-xf", archive)
        index = json.loads((layout / "index.json").read_text())
        tag = index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
        (work / "mq_test_broken.py").write_text(patch)
        (work / "mq_test_broken.pth").write_text("import mq_test_broken\n")
        for name in ("mq_test_broken.py", "mq_test_broken.pth"):
            _run("umoci", "insert", "--image", f"{layout}:{tag}", work / name, f"{SITE}/{name}")
        index = json.loads((layout / "index.json").read_text())
        for m in index["manifests"]:
            m.setdefault("annotations", {})["io.containerd.image.name"] = ref
        (layout / "index.json").write_text(json.dumps(index))
        _run("tar", "-C", layout, "-cf", work / "image.tar", ".")
        shutil.rmtree(layout)
        cluster.containerd.import_image(work / "image.tar")
    return ref


def image_archive(name: str) -> Path:
    """The cached OCI archive of image `name` (node, operator), as the cluster imported it."""
    out = subprocess.run(
        [str(HERE / "tools" / "build-images.sh"), name],
        check=True,
        capture_output=True,
        text=True,
        timeout=1800,
    ).stdout
    (line,) = [x for x in out.splitlines() if x.startswith(f"{name}\t")]
    return Path(line.split("\t")[2])

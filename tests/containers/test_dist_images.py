"""`make images`' archives in dist/ as a user meets them (issue 32): loaded by Podman and by
containerd's `ctr`, each image runs `metaquorum --version` as its non-root user on a read-only
root filesystem, says its version in a label, and its SBOM lists what is in it.

`dist/` is made by e2e/tools/dist_images.py (what `make images` runs; cached builds, so warm it
only copies). Podman comes from Debian's package (scripts/apt-install.sh podman), run with runc
and lowered rlimits: rootful Podman writes RLIMIT_NOFILE/NPROC into the spec, which runc cannot
set on this machine's container init (docs/e2e.md "kind"); containerd's `ctr run` sets none.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.containers.images import ROOT

sys.path.insert(0, str(ROOT / "e2e"))
from containerd import Containerd

pytestmark = pytest.mark.containers
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
PODMAN_RUN = ["--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


@pytest.fixture(scope="module")
def dist() -> list[dict[str, Any]]:
    if os.geteuid() != 0:
        pytest.fail("the containers tier needs root")
    subprocess.run([sys.executable, str(ROOT / "e2e" / "tools" / "dist_images.py")], check=True)
    images: list[dict[str, Any]] = json.loads((ROOT / "dist" / "images.json").read_text())
    assert sorted(i["name"] for i in images) == ["node", "operator"]
    return images


@pytest.fixture(scope="module")
def podman() -> str:
    if not shutil.which("podman"):
        subprocess.run(
            [str(ROOT / "scripts" / "apt-install.sh"), "--no-install-recommends", "podman"],
            check=True,
        )
    return "podman"


def test_archives_match_their_digests_labels_and_sbom(dist: list[dict[str, Any]]) -> None:
    sums = dict(
        reversed(line.split("  ")) for line in (ROOT / "dist/SHA256SUMS").read_text().splitlines()
    )
    lock = {
        p["name"]: p["version"] for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]
    }
    for img in dist:
        assert img["ref"] == f"docker.io/metaquorum/{img['name']}:{VERSION}"
        assert img["user"] == "1000"
        assert img["labels"]["org.opencontainers.image.version"] == VERSION
        assert set(sums) == {f"metaquorum-{n}-{VERSION}.{e}" for n in ("node", "operator")
                             for e in ("oci.tar", "cdx.json")}  # fmt: skip
        bom = json.loads((ROOT / "dist" / img["sbom"]).read_text())
        assert bom["metadata"]["component"]["hashes"][0]["content"] == img["digest"][7:]
        purls = {c["purl"] for c in bom["components"]}
        debs = {p.split("@")[0] for p in purls if p.startswith("pkg:deb/")}
        assert {"pkg:deb/debian/python3", "pkg:deb/debian/libc6"} <= debs
        pypi = {c["name"]: c["version"] for c in bom["components"] if "pypi" in c["purl"]}
        assert pypi["metaquorum"] == VERSION
        locked = {n: v for n, v in pypi.items() if n.lower() in lock and n != "metaquorum"}
        assert len(locked) >= 5, pypi
        for n, v in locked.items():  # the image installs the lock, hashes checked
            assert lock[n.lower()] == v, (img["name"], n, v)


@pytest.mark.parametrize("name", ["node", "operator"])
def test_podman_loads_and_runs_version(
    name: str, dist: list[dict[str, Any]], podman: str, tmp_path: Path
) -> None:
    (img,) = [i for i in dist if i["name"] == name]
    run_root = Path(tempfile.mkdtemp(prefix="mqpm-", dir="/tmp"))  # Podman: at most 50 chars
    store = ["--root", str(tmp_path / "storage"), "--runroot", str(run_root)]
    try:
        loaded = subprocess.run(
            [podman, *store, "load", "-i", str(ROOT / "dist" / img["archive"])],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert img["ref"] in loaded.stdout + loaded.stderr
        digest = subprocess.run(
            [podman, *store, "image", "inspect", "--format", "{{.Digest}}", img["ref"]],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        assert digest == img["digest"]
        run = subprocess.run(
            [podman, *store, "run", "--rm", *PODMAN_RUN, "--read-only", "--network", "none",
             "--entrypoint", "sh", img["ref"], "-c", "id -u && metaquorum --version"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["1000", "metaquorum", VERSION]
    finally:
        subprocess.run(
            [podman, *store, "rmi", "--all", "--force"], capture_output=True, check=False
        )
        shutil.rmtree(run_root, ignore_errors=True)


def test_ctr_imports_and_runs_version(dist: list[dict[str, Any]]) -> None:
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"mq-dist-ctrd-{os.getpid()}"
    c = Containerd(root)
    try:
        c.start()
        for img in dist:
            names = c.import_image(ROOT / "dist" / img["archive"], namespace="mqdist")
            assert img["ref"] in names
            listed = c.ctr("images", "ls", namespace="mqdist").stdout
            assert re.search(rf"^{re.escape(img['ref'])}\s+\S+\s+{img['digest']}", listed, re.M)
            run = c.ctr(
                "run", "--rm", "--read-only", img["ref"], f"v-{img['name']}",
                "sh", "-c", "id -u && metaquorum --version",
                namespace="mqdist",
            )  # fmt: skip
            assert run.stdout.split() == ["1000", "metaquorum", VERSION], run.stderr
    finally:
        c.stop()
        shutil.rmtree(root, ignore_errors=True)

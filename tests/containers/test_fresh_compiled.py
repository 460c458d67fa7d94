"""The compiled build on a fresh Debian (issue 28: `make test` on a fresh machine builds what it
needs by itself, a C compiler from Debian's packages if missing).

A chroot of Debian bookworm minbase plus the node image's `python3 python3-venv` (the cached
base of e2e/tools/build_images.py: no gcc, no python3-dev, no uv, no venv), a clean clone of
this repository's committed HEAD, `make` from Debian's packages (a fresh machine has it), the
machine's CA bundle and pip.conf (its egress), then `make compiled` as a user would type it:
scripts/fast-python.sh picks Debian's python3.11, `make setup` builds the venv, and
scripts/build_compiled.py must install gcc and python3.11-dev itself, then compile. ~5.5 min
(apt, PyPI, mypyc). Needs root (chroot) and the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from build_images import apt_packages, base_tar
from dockerfile import parse_file

from tests.containers.images import ROOT

pytestmark = pytest.mark.containers

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CA = "/etc/ssl/certs/ca-certificates.crt"


def _chroot(root: Path, script: str, timeout: int) -> str:
    env = [
        "env",
        "-i",
        f"PATH={PATH}",
        "HOME=/root",
        "LANG=C.UTF-8",
        "DEBIAN_FRONTEND=noninteractive",
    ]
    env += [f"{k}={CA}" for k in ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE")]
    done = subprocess.run(
        ["chroot", str(root), *env, "/bin/bash", "-c", script],
        check=False, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, f"{script}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.timeout(1800)
def test_a_fresh_debian_builds_the_compiled_tree_with_its_toolchain_from_apt(
    tmp_path: Path,
) -> None:
    if os.geteuid() != 0:
        pytest.fail("the containers tier needs root (chroot)")
    cache = Path(os.environ.get("METAQUORUM_CACHE", Path.home() / ".cache/metaquorum")) / "images"
    base = base_tar(cache, apt_packages(parse_file(ROOT / "node" / "Dockerfile")[-1]))
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(["tar", "-C", str(root), "-xpf", str(base)], check=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(root / "src")], check=True)
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    if Path(CA).is_file():
        (root / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
        shutil.copy(CA, root / CA.lstrip("/"))
    if Path("/etc/pip.conf").is_file():
        shutil.copy("/etc/pip.conf", root / "etc" / "pip.conf")
    subprocess.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True)
    try:
        fresh = _chroot(
            root,
            "command -v gcc || echo no-gcc; ls /usr/include/python3.11/Python.h 2>/dev/null"
            " || echo no-headers; apt-get update -q >/dev/null"
            " && apt-get install -y -q make >/dev/null",
            600,
        )
        assert "no-gcc" in fresh and "no-headers" in fresh, "the chroot is not fresh"
        _chroot(root, "cd /src && make compiled", 1500)
        where = _chroot(
            root,
            "command -v gcc && cd /src && PYTHONPATH=build/compiled .venv/bin/python -c"
            " 'import metaquorum.core.node as m; print(m.__file__)'",
            120,
        )
    finally:
        subprocess.run(["umount", str(root / "proc")], check=False)
    assert where.split()[0] == "/usr/bin/gcc", "gcc came from Debian's packages"
    assert (
        where.split()[-1]
        == "/src/build/compiled/metaquorum/core/node.cpython-311-x86_64-linux-gnu.so"
    )

"""Test-only: a fresh Debian root to chroot into (the containers tier's fresh-machine checks).

Role: `fresh_root(tmp)` unpacks the image build's cached base (e2e/tools/build_images.py:
bookworm minbase + the node image's `python3 python3-venv`; no gcc, no python3-dev), gives it
this machine's resolv.conf, CA bundle and pip.conf (its egress, as every machine of this kind
has them) and /proc, and yields its path; `chroot_run(root, script, timeout)` runs a bash
script in it with a clean environment and returns its stdout, failing with the script's output.

Invariant: nothing of the host but those three files (and /proc) is visible inside.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from build_images import apt_packages, base_tar
from dockerfile import parse_file

from tests.containers.images import ROOT

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CA = "/etc/ssl/certs/ca-certificates.crt"


@contextlib.contextmanager
def fresh_root(tmp: Path) -> Iterator[Path]:
    cache = Path(os.environ.get("METAQUORUM_CACHE", Path.home() / ".cache/metaquorum")) / "images"
    base = base_tar(cache, apt_packages(parse_file(ROOT / "node" / "Dockerfile")[-1]))
    root = tmp / "root"
    root.mkdir()
    subprocess.run(["tar", "-C", str(root), "-xpf", str(base)], check=True)
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    if Path(CA).is_file():
        (root / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
        shutil.copy(CA, root / CA.lstrip("/"))
    if Path("/etc/pip.conf").is_file():
        shutil.copy("/etc/pip.conf", root / "etc" / "pip.conf")
    subprocess.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True)
    try:
        yield root
    finally:
        subprocess.run(["umount", str(root / "proc")], check=False)


def chroot_run(root: Path, script: str, timeout: int) -> str:
    env = ["env", "-i", f"PATH={PATH}", "HOME=/root", "LANG=C.UTF-8"]
    env += ["DEBIAN_FRONTEND=noninteractive"]
    env += [f"{k}={CA}" for k in ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE")]
    done = subprocess.run(
        ["chroot", str(root), *env, "/bin/bash", "-c", script],
        check=False, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, f"{script}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout

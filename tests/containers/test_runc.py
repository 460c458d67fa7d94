"""The node image run by runc (Debian's package), as an OCI runtime bundle made by umoci.

The bundle's config.json is umoci's translation of the image config (user 1000, workdir, env,
PATH); the test only sets the command, the two bind mounts and shares the host's network
namespace (pod networking is the kubelet target's business). It checks that the node starts as
the image's non-root user, formats its mounted volume (files owned by uid 1000 on the host),
serves DescribeQuorum to the host's `metaquorum quorum describe`, and stops on SIGTERM with its
data kept. runc's state lives under the test's directory; the container is deleted by id.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.containers.images import Image
from tests.containers.runtime import DATA, START, describe, node_files, uid_of

pytestmark = pytest.mark.containers


def runc(state: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    check = bool(kw.pop("check", False))
    if "stdout" not in kw:
        kw["capture_output"] = True
    argv = ["runc", "--root", str(state), *args]
    return subprocess.run(argv, check=check, text=True, **kw)  # type: ignore[call-overload]


def test_node_runs_as_non_root_and_serves(images: dict[str, Image], tmp_path: Path) -> None:
    bundle_rootfs = images["node"].unpack(tmp_path / "img")
    bundle = bundle_rootfs.parent
    spec = json.loads((bundle / "config.json").read_text())
    uid = spec["process"]["user"]["uid"]
    assert uid == 1000, "umoci's spec takes the image's USER"
    conf, data, port, _ = node_files(tmp_path, uid)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["sh", "-c", START]
    spec["mounts"] += [
        {"destination": "/etc/metaquorum", "type": "bind", "source": str(conf),
         "options": ["rbind", "ro"]},
        {"destination": DATA, "type": "bind", "source": str(data), "options": ["rbind", "rw"]},
    ]  # fmt: skip
    spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
    (bundle / "config.json").write_text(json.dumps(spec))
    state, cid = tmp_path / "runc", f"mq-test-{tmp_path.name}"[-60:]
    pidfile = tmp_path / "container.pid"
    log = open(tmp_path / "container.log", "wb")  # noqa: SIM115 - the container's stdio
    started = runc(
        state, "run", "--detach", "--bundle", str(bundle), "--pid-file", str(pidfile), cid,
        stdout=log, stderr=log, timeout=60,
    )  # fmt: skip
    log.close()
    try:
        assert started.returncode == 0, (tmp_path / "container.log").read_text()
        pid = int(pidfile.read_text())
        t0 = time.monotonic()
        out = describe(port)
        print(f"runc: leader elected {time.monotonic() - t0:.1f}s after start\n{out}")
        assert uid_of(pid) == 1000, "the node runs as the image's user"
        assert "python" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        state_json = json.loads(runc(state, "state", cid, check=True).stdout)
        assert state_json["status"] == "running"
        owned = [p for p in (data / "log").rglob("*") if p.is_file()]
        assert owned, "the node formatted its mounted volume"
        assert {p.stat().st_uid for p in owned} == {1000}
        runc(state, "kill", cid, "TERM", check=True)
        deadline = time.monotonic() + 30
        while runc(state, "state", cid).stdout.find('"stopped"') < 0:
            assert time.monotonic() < deadline, "the node did not stop on SIGTERM"
            time.sleep(0.2)
        assert list(data.rglob("meta.properties")), "the formatted volume is kept"
    finally:
        with contextlib.suppress(Exception):
            runc(state, "delete", "--force", cid, timeout=30)
        print((tmp_path / "container.log").read_text(errors="replace")[-3000:])

"""containerd (Debian's package) with its own config, root, state and sockets under one directory.

Role: the container runtime of the real-kubelet e2e target (E2E_CLUSTER=local) and of the
containers tier's containerd test. Images are imported from the OCI archives that
e2e/tools/build-images.sh makes (`ctr images import`), never pulled.

Invariants:
- everything containerd writes is under `root` (config, content, snapshots, state, runc state,
  sockets), except what containerd 1.6 fixes itself: the shims' sockets in /run/containerd/s/
  (named by a hash of our socket address, so they never collide with another containerd);
- `stop()` kills every task of ours (SIGKILL), deletes the containers, stops containerd by its
  PID (SIGTERM, then SIGKILL), kills any shim left whose command line names our socket (by PID),
  unmounts whatever is still mounted under `root`, deepest first, removes its namespaces'
  parent cgroups when empty and the pod network namespaces its containers joined. It is
  idempotent and also runs from the CLI (`python e2e/containerd.py down DIR`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from procs import mounts_under, stop_pid  # noqa: E402

CNI_BIN = "/usr/lib/cni"
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10"


def config_toml(root: Path, cni_conf_dir: Path, sandbox_image: str = SANDBOX_IMAGE) -> str:
    return f"""version = 2
root = "{root}/lib"
state = "{root}/run"
oom_score = 0

[grpc]
  address = "{root}/containerd.sock"

[ttrpc]
  address = "{root}/containerd.sock.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{root}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  restrict_oom_score_adj = true  # lowering it (the sandbox asks -998) is refused here
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "runc"
        Root = "{root}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{cni_conf_dir}"
    max_conf_num = 1
"""


@dataclass
class Containerd:
    root: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni"

    def start(self, timeout: float = 30.0) -> float:
        """Start containerd and wait until it answers; returns the seconds it took."""
        t0 = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        self.cni_conf_dir.mkdir(exist_ok=True)
        config = self.root / "config.toml"
        config.write_text(config_toml(self.root, self.cni_conf_dir))
        log = open(self.root / "containerd.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            ["containerd", "--config", str(config), "--log-level", "info"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        (self.root / "containerd.pid").write_text(str(self.proc.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = (self.root / "containerd.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"containerd exited with {self.proc.returncode}:\n{tail}")
            if self.address.exists() and self.ctr("version", check=False).returncode == 0:
                return time.monotonic() - t0
            time.sleep(0.1)
        raise TimeoutError(f"containerd did not answer on {self.address} in {timeout:.0f}s")

    def ctr(
        self, *args: str, namespace: str = "k8s.io", check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["ctr", "--address", str(self.address), "--namespace", namespace, *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args)}: {proc.stderr.strip()}")
        return proc

    def import_image(self, archive: Path, namespace: str = "k8s.io") -> list[str]:
        """`ctr images import` an OCI archive; returns the image names it now has."""
        self.ctr("images", "import", str(archive), namespace=namespace)
        return self.ctr("images", "ls", "-q", namespace=namespace).stdout.split()

    def stop(self) -> None:
        stop_dir(self.root)
        self.proc = None


def _netns_of(c: Containerd, cid: str, ns: str) -> set[str]:
    """The named network namespaces (/var/run/netns/cni-*) a container's spec joins."""
    info = c.ctr("containers", "info", cid, namespace=ns, check=False).stdout
    try:
        spec = json.loads(info).get("Spec") or {}
    except json.JSONDecodeError:
        return set()
    paths = [n.get("path", "") for n in spec.get("linux", {}).get("namespaces", [])]
    return {
        Path(p).name for p in paths if re.fullmatch(r"/(var/)?run/netns/cni-[0-9a-f-]+", p or "")
    }


def _shim_socket(address: Path, ns: str, cid: str) -> Path:
    """Where containerd 1.6's runc v2 shim listens for a container (shim.SocketAddress)."""
    digest = hashlib.sha256(os.path.join(str(address), ns, cid).encode()).hexdigest()
    return Path("/run/containerd/s") / digest


def _our_shims(address: Path) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (d / "cmdline").read_bytes().split(b"\0")
            if b"containerd-shim" in argv[0] and str(address).encode() in argv:
                pids.append(int(d.name))
    return pids


def _kill_task(c: Containerd, task: str, ns: str) -> None:
    """SIGKILL a task's processes and delete the task once they are gone (up to 5 s)."""
    c.ctr("tasks", "kill", "--all", "--signal", "SIGKILL", task, namespace=ns, check=False)
    for _ in range(50):
        if c.ctr("tasks", "delete", task, namespace=ns, check=False).returncode == 0:
            return
        time.sleep(0.1)


def stop_dir(root: Path) -> None:
    """Stop the containerd whose files are under root, and everything it started."""
    pidfile = root / "containerd.pid"
    address = root / "containerd.sock"
    namespaces: list[str] = []
    netns: set[str] = set()
    sockets: list[Path] = []
    if pidfile.exists() and address.exists():
        c = Containerd(root)
        namespaces = c.ctr("namespaces", "ls", "-q", check=False).stdout.split()
        for ns in namespaces:
            tasks = c.ctr("tasks", "ls", "-q", namespace=ns, check=False).stdout.split()
            # one at a time this took 23-57 s at the end of the suite (a ctr process per call,
            # a task's delete retried until its kill lands): all tasks at once, a thread each
            with ThreadPoolExecutor(max_workers=16) as pool:
                list(pool.map(lambda t, ns=ns: _kill_task(c, t, ns), tasks))
            cids = c.ctr("containers", "ls", "-q", namespace=ns, check=False).stdout.split()
            for cid in cids:
                netns.update(_netns_of(c, cid, ns))
                sockets.append(_shim_socket(address, ns, cid))
            with ThreadPoolExecutor(max_workers=16) as pool:
                list(pool.map(lambda i, ns=ns: c.ctr("containers", "delete", i, namespace=ns,
                                                     check=False), cids))  # fmt: skip
    if pidfile.exists():
        stop_pid(int(pidfile.read_text()))
        pidfile.unlink()
    for pid in _our_shims(address):
        stop_pid(pid, grace=2.0)
    for mnt in mounts_under(root):
        subprocess.run(["umount", "-l", mnt], check=False, capture_output=True)
    for sock in sockets:  # a SIGKILLed shim leaves its socket behind
        sock.unlink(missing_ok=True)
    for name in netns:  # the CRI's pod network namespaces (pinned under /run/netns)
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)
    for ns in namespaces:  # ctr's per-namespace parent cgroups (rmdir: only when empty)
        for d in Path("/sys/fs/cgroup").glob(f"*/{ns}"):
            with contextlib.suppress(OSError):
                d.rmdir()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["up", "down"])
    ap.add_argument("dir", type=Path)
    args = ap.parse_args(argv)
    if args.action == "down":
        stop_dir(args.dir.resolve())
        return 0
    c = Containerd(args.dir.resolve())
    print(f"containerd ready in {c.start():.1f}s on {c.address}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

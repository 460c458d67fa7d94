"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager.

Role: the e2e tier's cluster where no container runtime exists (docs/e2e.md). The binaries come
from `e2e/tools/build-k8s.sh` (built from the Go module proxy, cached by version). Certificates
are made with openssl, authentication is by static tokens, authorization is RBAC (+ Node), and a
kubeconfig is written for tests, kubectl, helm and the kubelet stand-in.

Invariants:
- everything listens on 127.0.0.1 only, on ports picked free at start;
- every process is started in its own session and stopped by its PID (SIGTERM, then SIGKILL);
  `stop()` is idempotent and also runs from the CLI (`python e2e/controlplane.py down DIR`);
- all state (etcd data, certs, logs, pid files) lives under one directory.

Imports: containerd.py (stop_dir stops the real-kubelet target's containerd with its pods) and
procs.py (stop by PID, mounts); neither imports this module back.

CLI: `python e2e/controlplane.py up DIR` (prints the kubeconfig path, leaves the processes
running) and `python e2e/controlplane.py down DIR`.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from containerd import stop_dir as stop_containerd
from procs import mounts_under, stop_pid

HERE = Path(__file__).resolve().parent
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"
ISSUER = "https://kubernetes.default.svc.cluster.local"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def k8s_bin_dir() -> Path:
    """Build (or find cached) kube-apiserver, kube-controller-manager and etcd."""
    env_dir = os.environ.get("E2E_K8S_BIN")
    if env_dir:
        return Path(env_dir)
    out = subprocess.run(
        [str(HERE / "tools" / "build-k8s.sh")], check=True, stdout=subprocess.PIPE, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path, extra_ips: tuple[str, ...] = ()) -> None:
    """CA, apiserver serving cert (SANs for loopback, the service IP and extra_ips), SA keys."""
    d.mkdir(parents=True, exist_ok=True)
    if (d / "apiserver.crt").exists():
        return
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "365",
        "-subj",
        "/CN=metaquorum-e2e-ca",
        cwd=d,
    )
    sans = ",".join(
        [
            "IP:127.0.0.1",
            f"IP:{SERVICE_IP}",
            *(f"IP:{ip}" for ip in extra_ips),
            "DNS:localhost",
            "DNS:kubernetes",
            "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local",
        ]
    )
    (d / "san.cnf").write_text(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n")
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "apiserver.key",
        "-out",
        "apiserver.csr",
        "-subj",
        "/CN=kube-apiserver",
        cwd=d,
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "apiserver.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "apiserver.crt",
        "-days",
        "365",
        "-extfile",
        "san.cnf",
        cwd=d,
    )
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def write_kubeconfig(path: Path, server: str, ca: Path, token: str, user: str) -> None:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: e2e\n  cluster:\n    server: {server}\n"
        f"    certificate-authority: {ca}\n"
        f"users:\n- name: {user}\n  user:\n    token: {token}\n"
        f"contexts:\n- name: e2e\n  context:\n    cluster: e2e\n    user: {user}\n"
        "current-context: e2e\n"
    )
    path.chmod(0o600)


@dataclass
class ControlPlane:
    """The three processes and their files. `start()` blocks until /readyz answers ok."""

    root: Path
    bin_dir: Path | None = None
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    server: str = ""
    admin_token: str = ""
    start_seconds: float = 0.0
    # The real-kubelet target (kubeletcluster.py): the apiserver on an address pods reach, the
    # `kubernetes` Service's endpoints kept by the apiserver, and more users (name -> groups).
    bind_address: str = "127.0.0.1"
    endpoint_reconciler: str = "none"
    users: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    apiserver_args: list[str] = field(default_factory=list)

    @property
    def kubeconfig(self) -> Path:
        return self.root / "admin.kubeconfig"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self.procs[name] = proc
        (self.root / f"{name}.pid").write_text(str(proc.pid))

    def start(self, timeout: float = 120.0) -> None:
        t0 = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        bins = self.bin_dir or k8s_bin_dir()
        extra_ips = () if self.bind_address == "127.0.0.1" else (self.bind_address,)
        make_pki(self.pki, extra_ips)
        self.admin_token = secrets.token_hex(16)
        kcm_token = secrets.token_hex(16)
        lines = [
            f'{self.admin_token},e2e-admin,e2e-admin,"system:masters"',
            f"{kcm_token},system:kube-controller-manager,kcm",
        ]
        for i, (user, groups) in enumerate(self.users.items()):
            self.tokens[user] = secrets.token_hex(16)
            lines.append(f'{self.tokens[user]},{user},u{i},"{groups}"')
        (self.pki / "tokens.csv").write_text("\n".join(lines) + "\n")
        etcd_port, etcd_peer = free_port(), free_port()
        api_port = free_port(self.bind_address)
        self.server = f"https://{self.bind_address}:{api_port}"
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            "etcd",
            [
                str(bins / "etcd"),
                "--name",
                "e2e",
                "--data-dir",
                str(self.root / "etcd"),
                "--listen-client-urls",
                etcd_url,
                "--advertise-client-urls",
                etcd_url,
                "--listen-peer-urls",
                f"http://127.0.0.1:{etcd_peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{etcd_peer}",
                "--initial-cluster",
                f"e2e=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ],
        )
        p = self.pki
        self._spawn(
            "kube-apiserver",
            [
                str(bins / "kube-apiserver"),
                "--etcd-servers",
                etcd_url,
                f"--bind-address={self.bind_address}",
                f"--advertise-address={self.bind_address}",
                f"--secure-port={api_port}",
                f"--cert-dir={p}",
                f"--tls-cert-file={p / 'apiserver.crt'}",
                f"--tls-private-key-file={p / 'apiserver.key'}",
                f"--client-ca-file={p / 'ca.crt'}",
                f"--token-auth-file={p / 'tokens.csv'}",
                "--authorization-mode=Node,RBAC",
                f"--service-account-issuer={ISSUER}",
                f"--service-account-key-file={p / 'sa.pub'}",
                f"--service-account-signing-key-file={p / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                f"--endpoint-reconciler-type={self.endpoint_reconciler}",
                "--profiling=false",
                "-v=1",
                *self.apiserver_args,
            ],
        )
        write_kubeconfig(self.kubeconfig, self.server, p / "ca.crt", self.admin_token, "e2e-admin")
        kcm_kubeconfig = self.root / "kcm.kubeconfig"
        write_kubeconfig(
            kcm_kubeconfig, self.server, p / "ca.crt", kcm_token, "system:kube-controller-manager"
        )
        self.wait_ready(timeout - (time.monotonic() - t0))
        self._spawn(
            "kube-controller-manager",
            [
                str(bins / "kube-controller-manager"),
                f"--kubeconfig={kcm_kubeconfig}",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={p / 'sa.key'}",
                f"--root-ca-file={p / 'ca.crt'}",
                f"--cluster-signing-cert-file={p / 'ca.crt'}",
                f"--cluster-signing-key-file={p / 'ca.key'}",
                "--controllers=*",
                "--secure-port=0",
                "--profiling=false",
                "-v=1",
            ],
        )
        self.start_seconds = time.monotonic() - t0

    def wait_ready(self, timeout: float) -> None:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        req = urllib.request.Request(
            self.server + "/readyz", headers={"Authorization": f"Bearer {self.admin_token}"}
        )
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    tail = (self.root / f"{name}.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(req, context=ctx, timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception as e:  # not up yet
                last = str(e)
            time.sleep(0.25)
        raise TimeoutError(f"kube-apiserver not ready in {timeout:.0f}s: {last}")

    def user_kubeconfig(self, user: str) -> Path:
        path = self.root / f"{user.replace(':', '-')}.kubeconfig"
        write_kubeconfig(path, self.server, self.pki / "ca.crt", self.tokens[user], user)
        return path

    def stop(self) -> None:
        stop_dir(self.root)
        self.procs.clear()


def stop_dir(root: Path) -> None:
    """Stop the processes whose pid files are in root, in reverse start order (the kubelet
    stand-in first: it stops its pods on SIGTERM; with the real kubelet, containerd's pods are
    stopped by containerd.stop_dir once the kubelet is gone)."""
    node_side = ("kubelet", "kube-proxy", "kube-scheduler", "coredns", "provisioner")
    for name in node_side:
        pidfile = root / f"{name}.pid"
        if pidfile.exists():
            stop_pid(int(pidfile.read_text()), grace=20.0 if name == "kubelet" else 10.0)
            pidfile.unlink()
    if (root / "containerd" / "containerd.pid").exists():
        stop_containerd(root / "containerd")
    for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
        pidfile = root / f"{name}.pid"
        if pidfile.exists():
            stop_pid(int(pidfile.read_text()), grace=10.0)
            pidfile.unlink()
    # the real kubelet's volume mounts (tmpfs, local PV binds) and its root dir's self-bind
    for mnt in mounts_under(root):
        subprocess.run(["umount", "-l", mnt], check=False, capture_output=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["up", "down"])
    ap.add_argument("dir", type=Path)
    args = ap.parse_args(argv)
    if args.action == "down":
        stop_dir(args.dir)
        return 0
    cp = ControlPlane(args.dir.resolve())
    try:
        cp.start()
    except Exception as e:
        cp.stop()
        print(f"control plane failed to start: {e}", file=sys.stderr)
        return 1
    print(f"ready in {cp.start_seconds:.1f}s; export KUBECONFIG={cp.kubeconfig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

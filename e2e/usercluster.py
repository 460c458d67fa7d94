"""`make cluster`: the e2e tier's real single-node Kubernetes as a user tool that stays up.

Role: `up` starts kubeletcluster.KubeletNode (the same code the e2e fixture runs: control plane,
kube-scheduler, kubelet, containerd + runc, CNI bridge, kube-proxy, CoreDNS, the node and
operator images imported) in a persistent network namespace (`mq-cluster`) and returns once it
is usable (KubeletNode.wait_usable); `down` stops it and removes everything it made; `status`
says what is running; `shell` enters the namespace with kubectl, helm, metaquorum and Kafka's
kafka-metadata-quorum.sh on PATH, KUBECONFIG set and the cluster's DNS (CoreDNS) as resolver.

Invariants:
- all state (pid files, logs, certificates, etcd, containerd, PVs) is under one directory
  (MQ_CLUSTER_STATE, default /var/lib/metaquorum-cluster); the namespace's name is recorded
  there (`netns`) before the namespace is made, so a namespace of that name without the file
  is someone else's and is never touched;
- processes are stopped by the PID their starter recorded, and only when that process's
  command line names the state dir (a pid file that outlived a reboot never hits a stranger);
- `down` leaves nothing: processes, mounts under the state dir, the pods' and the cluster's
  network namespaces (the bridge and kube-proxy's iptables chains live only in the latter),
  containerd's cgroups; it also cleans a half-started cluster;
- bad input (not root, no cgroups/overlayfs/netns, a foreign namespace of that name, a
  half-started earlier run) is one line naming the cause and the fix, exit 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from controlplane import SERVICE_CIDR, stop_dir  # noqa: E402
from procs import mounts_under  # noqa: E402

STATE = Path(os.environ.get("MQ_CLUSTER_STATE", "/var/lib/metaquorum-cluster"))
NETNS = os.environ.get("MQ_CLUSTER_NETNS", "mq-cluster")
PROCS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "coredns",
    "kube-scheduler",
    "kube-proxy",
    "provisioner",
    "kubelet",
    "containerd/containerd",
)


class Refused(Exception):
    """Bad input: the one line to print."""


def _tool(*argv: str) -> str:
    out = subprocess.run([*argv], check=False, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise Refused(f"{Path(argv[0]).name} failed (see its output above)")
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def netns_exists(name: str) -> bool:
    return (Path("/run/netns") / name).exists()


def _ours(pid: int, state: Path) -> bool:
    try:
        return str(state) in (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(
            errors="replace"
        ).replace("\0", " ")
    except (OSError, ValueError):
        return False


def running(state: Path) -> dict[str, int | None]:
    """Each process's pid when it runs (and is ours), else None; absent: no pid file."""
    out: dict[str, int | None] = {}
    for name in PROCS:
        f = state / f"{name}.pid"
        if f.exists():
            with contextlib.suppress(ValueError):
                pid = int(f.read_text())
                out[name] = pid if _ours(pid, state) else None
    return out


def condition(state: Path, netns: str) -> str:
    """up | down | half | foreign (a namespace of that name, not made here)."""
    recorded = (state / "netns").exists()
    if netns_exists(netns) and not recorded:
        return "foreign"
    procs = running(state)
    if (
        recorded
        and (state / "up.json").exists()
        and netns_exists(netns)
        and len(procs) == len(PROCS)
        and all(procs.values())
    ):
        return "up"
    if recorded or procs or (state.exists() and any(state.iterdir())):
        return "half"
    return "down"


def clients_bin() -> Path:
    return Path(_tool(str(HERE / "tools" / "install-clients.sh")))


def shell_dir(state: Path) -> Path:
    """resolv.conf (CoreDNS, the cluster's search path) and a bin dir for `make cluster-shell`."""
    from kubeletcluster import GATEWAY  # imports the Kubernetes client: only where needed

    d = state / "shell"
    (d / "bin").mkdir(parents=True, exist_ok=True)
    (d / "resolv.conf").write_text(
        f"nameserver {GATEWAY}\nsearch default.svc.cluster.local svc.cluster.local "
        "cluster.local\noptions ndots:5\n"
    )
    return d


def paste_lines(state: Path, netns: str) -> str:
    return (
        f"  make cluster-shell          # a shell in the cluster's network namespace "
        f"({netns}): kubectl, helm, metaquorum, kafka-metadata-quorum.sh\n"
        f"  export KUBECONFIG={state / 'admin.kubeconfig'}   # for tools you run with "
        f"`ip netns exec {netns} ...`\n"
        "  make cluster-down           # stops it and removes everything it made"
    )


def preflight() -> None:
    proc = subprocess.run(
        [str(HERE / "tools" / "container-host.sh"), "check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise Refused(
            f"containers cannot run here: {proc.stdout.strip()}; fix that (run as root on a "
            "host with cgroups, overlayfs and network namespaces), or use the control plane "
            "with the kubelet stand-in: `E2E_CLUSTER=stand-in make e2e` (docs/e2e.md)"
        )


def up(state: Path, netns: str) -> int:
    preflight()
    cond = condition(state, netns)
    if cond == "up":
        print(f"make cluster: the cluster is already up (state {state}, netns {netns})")
        print(paste_lines(state, netns))
        return 0
    if cond == "foreign":
        raise Refused(
            f"network namespace {netns} exists but was not made by make cluster (no "
            f"{state / 'netns'}): delete it (`ip netns del {netns}`) or pick another name "
            f"(MQ_CLUSTER_NETNS=<name> make cluster)"
        )
    if cond == "half":
        raise Refused(
            f"a half-started or stopped cluster is left in {state} (netns {netns}): run "
            "`make cluster-down` first, then `make cluster`"
        )
    t0 = time.monotonic()
    tools = HERE / "tools"
    _tool(str(tools / "container-host.sh"), "install")
    clients_bin()
    k8s_bin = _tool(str(tools / "build-k8s.sh"))
    # the namespace has no way out: everything that may download is built here first (the
    # node's own calls in the namespace then find them cached)
    for script in ("build-k8s-node.sh", "build-coredns.sh", "build-images.sh"):
        _tool(str(tools / script))
    print(
        f"make cluster: binaries and images ready (cached builds) in {time.monotonic() - t0:.0f} s"
    )
    state.mkdir(parents=True, exist_ok=True)
    (state / "netns").write_text(netns)
    subprocess.run(["ip", "netns", "add", netns], check=True)
    env = {**os.environ, "E2E_NETNS": netns, "E2E_K8S_BIN": k8s_bin}
    proc = subprocess.run(
        ["nsenter", f"--net=/run/netns/{netns}", sys.executable, __file__, "_start"],
        env={**env, "MQ_CLUSTER_STATE": str(state)},
        check=False,
    )
    if proc.returncode != 0:
        raise Refused(
            f"the cluster did not start (logs: {state}/*.log): `make cluster-down` cleans up"
        )
    seconds = time.monotonic() - t0
    (state / "up.json").write_text(json.dumps({"netns": netns, "seconds": round(seconds, 1)}))
    print(f"make cluster: up in {seconds:.0f} s (state {state}, netns {netns}). Next:")
    print(paste_lines(state, netns))
    return 0


def _start(state: Path) -> int:
    """Inside the namespace: start the node, route the Service range, wait until usable."""
    from kubeletcluster import BRIDGE, GATEWAY, KubeletNode
    from kubernetes import config

    node = KubeletNode(state)
    try:
        node.start()
        # processes of this namespace (the shell's tools) reach ClusterIPs through kube-proxy
        subprocess.run(
            ["ip", "route", "replace", SERVICE_CIDR, "dev", BRIDGE, "src", GATEWAY], check=True
        )
        node.wait_usable(config.new_client_from_config(str(node.cp.kubeconfig)))
    except Exception as e:  # the one line; the logs are in the state dir
        print(f"make cluster: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return 1
    (state / "timings.json").write_text(json.dumps(node.timings, indent=1))
    return 0


def down(state: Path, netns: str) -> int:
    cond = condition(state, netns)
    if cond == "foreign":
        raise Refused(
            f"network namespace {netns} was not made by make cluster: left alone "
            f"(`ip netns del {netns}` removes it)"
        )
    if cond == "down" and not state.exists():
        print("make cluster-down: no cluster here; nothing to do")
        return 0
    for name, pid in running(state).items():  # a stale pid file must not name a stranger
        if pid is None:
            (state / f"{name}.pid").unlink()
    stop_dir(state)  # node side, containerd with its pods (+ their netns, cgroups), control plane
    if netns_exists(netns) and (state / "netns").exists():
        subprocess.run(["ip", "netns", "del", netns], check=False)
    left = mounts_under(state)
    if left:
        raise Refused(f"mounts still under {state}: {left[:3]}; unmount them and run again")
    shutil.rmtree(state, ignore_errors=True)
    print(f"make cluster-down: stopped; {state} and netns {netns} removed")
    return 0


def status(state: Path, netns: str) -> int:
    cond = condition(state, netns)
    print(f"cluster: {cond} (state {state}, netns {netns})")
    for name, pid in running(state).items():
        print(f"  {name:26} {'pid ' + str(pid) if pid else 'NOT RUNNING'}")
    if cond == "up":
        kubectl = clients_bin() / "kubectl"
        subprocess.run(
            ["ip", "netns", "exec", netns, str(kubectl), "get", "nodes,pods", "-A", "-o", "wide"],
            env={**os.environ, "KUBECONFIG": str(state / "admin.kubeconfig")},
            check=False,
        )
    return 0 if cond in ("up", "down") else 1


def shell(state: Path, netns: str, command: list[str]) -> int:
    if condition(state, netns) != "up":
        raise Refused("no cluster is up: run `make cluster` first (`make cluster-status` says why)")
    d = shell_dir(state)
    links = {
        "kubectl": clients_bin() / "kubectl",
        "helm": clients_bin() / "helm",
        "metaquorum": ROOT / ".venv" / "bin" / "metaquorum",
        "kafka-metadata-quorum.sh": ROOT / "scripts" / "kafka-metadata-quorum.sh",
    }
    for name, target in links.items():
        (d / "bin" / name).unlink(missing_ok=True)
        (d / "bin" / name).symlink_to(target)
    rc = d / "bashrc"
    rc.write_text(
        '[ -f ~/.bashrc ] && . ~/.bashrc\nexport PATH="$MQ_SHELL_PATH"\n'
        f"PS1='({netns}) \\w\\$ '\n"
    )
    path = f"{d / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    env = {**os.environ, "KUBECONFIG": str(state / "admin.kubeconfig"), "PATH": path}
    env["MQ_SHELL_PATH"] = path
    if command:
        inner = " ".join(command)
    elif sys.stdin.isatty():
        inner = f"exec bash --rcfile {rc} -i"
        print(f"make cluster-shell: in netns {netns}; `exit` leaves it")
    else:
        inner = "exec bash -s"  # commands piped in
    script = f"mount --bind {d / 'resolv.conf'} /etc/resolv.conf && {inner}"
    argv = ["nsenter", f"--net=/run/netns/{netns}", "unshare", "--mount", "--propagation",
            "private", "bash", "-c", script]  # fmt: skip
    os.execvpe(argv[0], argv, env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["up", "down", "status", "shell", "_start"])
    ap.add_argument("--kind", action="store_true", help="kind with Docker/Podman (userkind.py)")
    ap.add_argument(
        "command", nargs=argparse.REMAINDER, help="shell: a command to run instead of a shell"
    )
    args = ap.parse_args(argv)
    state, netns = STATE.resolve(), NETNS
    what = {"up": "make cluster", "down": "make cluster-down", "status": "make cluster-status"}
    try:
        if args.kind:
            if os.geteuid() != 0:
                what = {k: f"{v} KIND=1" for k, v in what.items()}
                raise Refused("needs root (make images builds the images with chroot, and kind "
                              "drives the runtime as root): run it as root")  # fmt: skip
            return kind_action(args.action)
        if args.action != "_start" and os.geteuid() != 0:
            raise Refused("needs root (containerd, runc, network namespaces): run it as root")
        if args.action == "up":
            return up(state, netns)
        if args.action == "down":
            return down(state, netns)
        if args.action == "status":
            return status(state, netns)
        if args.action == "shell":
            return shell(state, netns, args.command)
        return _start(state)
    except Refused as e:
        print(f"{what.get(args.action, 'make cluster-shell')}: {e}", file=sys.stderr)
        return 1


def kind_action(action: str) -> int:
    """`KIND=1`: the kind cluster's up/down/status (userkind.py); its refusals, one line each."""
    import userkind

    what = {"up": "make cluster KIND=1", "down": "make cluster-down KIND=1"}
    try:
        if action == "up":
            return userkind.up(clients_bin)
        if action == "down":
            return userkind.down()
        if action == "status":
            return userkind.status()
        raise userkind.KindRefused(
            "cluster-shell is for the namespace cluster: with kind, run kubectl on the host "
            "(`make cluster KIND=1` prints the KUBECONFIG line)"
        )
    except (userkind.KindRefused, Refused) as e:
        print(f"{what.get(action, 'make cluster-' + action + ' KIND=1')}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

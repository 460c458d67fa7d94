"""What a cluster can leave on the host, as sets to compare before and after (`make cluster-down`).

Role: the quickstart test's host check (test_quickstart.py): `snapshot(state)` lists, for each
kind of thing a real-kubelet cluster makes outside its own files, the entries present now:
processes naming the state dir, mount points, named network namespaces (`ip netns`), the host
network namespace's iptables chains (read through /proc/1/ns/net, wherever the caller runs),
cgroup directories down to two levels below each hierarchy (containerd's `k8s.io/<id>`), and
containerd's shim sockets. `left_behind(before, after)` is what appeared and stayed.

Invariants: a leaf of the e2e import graph (standard library only); reads, never changes, the
host. Entries that come and go with other work on the machine (other tests' network namespaces,
cgroups) show up only if they appear between the two snapshots: callers hold /work/e2e.lock-like
serialisation or compare only what their cluster could have made.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

KINDS = ("processes", "mounts", "netns", "iptables", "cgroups", "shim-sockets")


def _processes(state: Path) -> set[str]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if str(state) in argv:
                    out.add(f"{d.name} {argv.strip()}")
    return out


def _mounts() -> set[str]:
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return {line.split()[4] for line in lines}


def _netns() -> set[str]:
    run = Path("/run/netns")
    return {p.name for p in run.iterdir()} if run.is_dir() else set()


def _iptables() -> set[str]:
    """Chains of the host's network namespace (pid 1's), `table:chain`, IPv4 and IPv6."""
    chains = set()
    for tool in ("iptables-save", "ip6tables-save"):
        proc = subprocess.run(
            ["nsenter", "--net=/proc/1/ns/net", tool],
            capture_output=True,
            text=True,
            check=False,
        )
        table = ""
        for line in proc.stdout.splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":"):
                chains.add(f"{tool.split('-')[0]}:{table}:{line[1:].split()[0]}")
    return chains


def _cgroups() -> set[str]:
    root = Path("/sys/fs/cgroup")
    out = set()
    for top in root.iterdir() if root.is_dir() else []:
        with contextlib.suppress(OSError):
            for d in top.iterdir():
                if d.is_dir():
                    out.add(str(d))
                    out.update(str(e) for e in d.iterdir() if e.is_dir())
    return out


def _shim_sockets() -> set[str]:
    d = Path("/run/containerd/s")
    return {p.name for p in d.iterdir()} if d.is_dir() else set()


def snapshot(state: Path) -> dict[str, set[str]]:
    return {
        "processes": _processes(state),
        "mounts": _mounts(),
        "netns": _netns(),
        "iptables": _iptables(),
        "cgroups": _cgroups(),
        "shim-sockets": _shim_sockets(),
    }


def left_behind(before: dict[str, set[str]], after: dict[str, set[str]]) -> dict[str, set[str]]:
    """Per kind, the entries in `after` that were not in `before` (empty kinds dropped)."""
    return {k: after[k] - before[k] for k in KINDS if after[k] - before[k]}

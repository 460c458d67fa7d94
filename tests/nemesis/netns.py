"""Network namespaces for one nemesis run: each node in its own namespace, joined by veth links
to a bridge in a hub namespace where the clients run; faults with nftables and tc.

Role: `Net.create()` builds `<tag>-hub` (bridge `br0`, the clients' address 10.201.0.100) and
one `<tag>-n<i>` per node (`eth0` at 10.201.0.<i>, a veth whose peer `n<i>` is a bridge port);
each node namespace gets an nftables table `inet nemesis` with empty input/output chains, where
the faults go: `cut(a, b)` drops a's packets to b (one way), `partition(groups)` cuts every
pair across groups both ways, `loss(i, pct)` drops that share of i's outgoing packets
(`numgen random`), `slow(i)` puts a token-bucket filter on i's link (a slow link: packets
queue, then drop), `delay(i, ...)` hands i's packets to the other nodes to NFQUEUE 0 (an
iptables NFQUEUE rule: this kernel has the xtables target, not nft's `queue`) where
`mqnemesis delay`, run in i's namespace, holds them (delay, and reordering when only a share
is held). `heal()` flushes every rule and qdisc and stops the delay programs (each accepts
what it still holds) and returns their one-line summaries. `in_netns(ns, fn)` runs `fn` on a
thread that has entered a namespace (`setns`), so the harness can reach the nodes' HTTP
status without an address outside the namespaces.
Invariants: every address lives in a namespace this module created; `destroy()` removes them
all (idempotent). This kernel has no `sch_netem` (CONFIG_NET_SCH_NETEM is off): delay and
reordering come from NFQUEUE and a userspace program instead; duplication is not offered.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
SUBNET = "10.201.0"
CLIENT_IP = f"{SUBNET}.100"
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def node_ip(i: int) -> str:
    return f"{SUBNET}.{i}"


def sh(*argv: str, stdin: str | None = None, check: bool = True) -> str:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return done.stdout


def in_netns(ns: str, fn: Callable[[], T]) -> T:
    """`fn()` on a fresh thread inside network namespace `ns` (its sockets stay there)."""
    box: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({ns}): {os.strerror(err)}")
            finally:
                os.close(fd)
            box.append(fn())
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return box[0]


class Net:
    def __init__(self, tag: str, nodes: Iterable[int]) -> None:
        self.tag = tag
        self.hub = f"{tag}-hub"
        self.ns = {i: f"{tag}-n{i}" for i in nodes}
        self.delayers: dict[int, subprocess.Popen[str]] = {}

    def create(self) -> None:
        hub = self.hub
        sh("ip", "netns", "add", hub)
        sh("ip", "-n", hub, "link", "set", "lo", "up")
        sh("ip", "-n", hub, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", hub, "addr", "add", f"{CLIENT_IP}/24", "dev", "br0")
        sh("ip", "-n", hub, "link", "set", "br0", "up")
        for i, ns in self.ns.items():
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh(
                *("ip", "link", "add", "eth0", "netns", ns, "type", "veth"),
                *("peer", "name", f"n{i}", "netns", hub),
            )
            sh("ip", "-n", ns, "addr", "add", f"{node_ip(i)}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", hub, "link", "set", f"n{i}", "master", "br0")
            sh("ip", "-n", hub, "link", "set", f"n{i}", "up")
            self.nft(
                i,
                "add table inet nemesis\n"
                "add chain inet nemesis input { type filter hook input priority 0; }\n"
                "add chain inet nemesis output { type filter hook output priority 0; }\n",
            )

    def destroy(self) -> None:
        for proc in self.delayers.values():
            proc.kill()
            proc.wait()
        self.delayers.clear()
        for ns in [*self.ns.values(), self.hub]:
            sh("ip", "netns", "del", ns, check=False)

    def exec_prefix(self, i: int | None) -> list[str]:
        """The argv prefix that runs a command in node i's namespace (the hub's for None);
        `ip netns exec` execs the command, so its pid is the command's."""
        return ["ip", "netns", "exec", self.hub if i is None else self.ns[i]]

    def nft(self, i: int, script: str) -> None:
        sh("ip", "netns", "exec", self.ns[i], "nft", "-f", "-", stdin=script)

    # --- faults ------------------------------------------------------------------------------
    def cut(self, a: int, b: int) -> None:
        """a's packets to b are dropped (b's to a still flow)."""
        self.nft(a, f"add rule inet nemesis output ip daddr {node_ip(b)} drop\n")
        self.nft(b, f"add rule inet nemesis input ip saddr {node_ip(a)} drop\n")

    def partition(self, groups: list[list[int]]) -> None:
        for g in groups:
            for h in groups:
                if g is not h:
                    for a in g:
                        for b in h:
                            self.cut(a, b)

    def loss(self, i: int, pct: int) -> None:
        pct = max(1, min(99, pct))
        self.nft(i, f"add rule inet nemesis output numgen random mod 100 < {pct} drop\n")

    def slow(self, i: int, rate: str = "256kbit") -> None:
        sh(
            *("ip", "netns", "exec", self.ns[i], "tc", "qdisc", "add", "dev", "eth0", "root"),
            *("tbf", "rate", rate, "burst", "4kb", "latency", "300ms"),
        )

    def delay(
        self, i: int, mqnemesis: Path, min_ms: int, max_ms: int, share: int, seed: int
    ) -> None:
        """Node i's packets to the other nodes: `share`% of them held min..max ms each (the
        rest pass at once, so held ones arrive after later ones); one program per node."""
        argv = [*self.exec_prefix(i), str(mqnemesis), "delay", f"-seed={seed}"]
        argv += [f"-min-ms={min_ms}", f"-max-ms={max_ms}", f"-share={share}"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            proc.kill()
            _, err = proc.communicate(timeout=5)
            raise RuntimeError(f"mqnemesis delay in {self.ns[i]} did not start: {err.strip()}")
        self.delayers[i] = proc
        peers = ",".join(node_ip(j) for j in self.ns if j != i)
        sh(
            *("ip", "netns", "exec", self.ns[i], "iptables", "-A", "OUTPUT", "-d", peers),
            *("-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"),
        )

    def heal(self) -> list[str]:
        for i, ns in self.ns.items():
            self.nft(i, "flush chain inet nemesis input\nflush chain inet nemesis output\n")
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
        said = []
        for i, proc in sorted(self.delayers.items()):
            sh("ip", "netns", "exec", self.ns[i], "iptables", "-F", "OUTPUT", check=False)
            proc.terminate()  # it accepts every packet it still holds, then exits
            _, err = proc.communicate(timeout=10)
            last = err.strip().splitlines()[-1] if err.strip() else "no summary"
            said.append(f"node {i}: {last}")
        self.delayers.clear()
        return said

"""etcd 3.6 for the benchmark: 3 members on loopback, defaults (WAL fsync on, heartbeat 100 ms,
election timeout 1000 ms), the binary built by the e2e tier's script (cached, idempotent).

Role: start/stop/kill members, find the leader and its raft term through the JSON gateway
(`/v3/maintenance/status`), sum the members' CPU. The load goes through `bench/goload` (clientv3,
gRPC), which also reports the first commit answered with a newer raft term (the failover probe).
Invariants: every member started is stopped; a killed member restarts on its own data dir.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

from bench.common import REPO, Proc, free_ports

ETCD_VERSION = "v3.6.16"


def etcd_binary() -> Path:
    out = subprocess.run(
        [str(REPO / "e2e" / "tools" / "build-k8s.sh")], check=True, capture_output=True, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1]) / "etcd"


class EtcdCluster:
    name = "etcd"

    def __init__(self, base: Path) -> None:
        shutil.rmtree(base, ignore_errors=True)
        self.base = base
        self.binary = etcd_binary()
        ports = free_ports(6)
        self.client_ports = {i: ports[2 * i - 2] for i in (1, 2, 3)}
        self.peer_ports = {i: ports[2 * i - 1] for i in (1, 2, 3)}
        initial = ",".join(f"m{i}=http://127.0.0.1:{p}" for i, p in self.peer_ports.items())
        self.procs: dict[int, Proc] = {}
        for i in (1, 2, 3):
            cp, pp = self.client_ports[i], self.peer_ports[i]
            argv = [
                str(self.binary),
                f"--name=m{i}",
                f"--data-dir={base / f'm{i}'}",
                f"--listen-client-urls=http://127.0.0.1:{cp}",
                f"--advertise-client-urls=http://127.0.0.1:{cp}",
                f"--listen-peer-urls=http://127.0.0.1:{pp}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{pp}",
                f"--initial-cluster={initial}",
                "--initial-cluster-state=new",
                "--initial-cluster-token=bench",
                "--log-level=warn",
            ]
            self.procs[i] = Proc(f"etcd-{i}", argv, base / f"m{i}.log")

    def start(self) -> None:
        for p in self.procs.values():
            p.start()
        self.leader()

    def endpoints(self) -> list[str]:
        return [f"127.0.0.1:{p}" for p in self.client_ports.values()]

    def status(self, i: int, timeout_s: float = 0.5) -> dict[str, object] | None:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.client_ports[i]}/v3/maintenance/status",
            data=b"{}",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                doc: dict[str, object] = json.loads(r.read())
                return doc
        except (OSError, ValueError):
            return None

    def leader(self, timeout_s: float = 30) -> tuple[int, int]:
        """(member index, raft term) of the current leader, as the leader itself reports."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for i, p in self.procs.items():
                if not p.alive():
                    continue
                st = self.status(i)
                if st is None:
                    continue
                header = st.get("header")
                if not isinstance(header, dict):
                    continue
                if str(st.get("leader")) == str(header.get("member_id")):
                    return i, int(str(st.get("raftTerm", header.get("raft_term", 0))))
            time.sleep(0.05)
        raise TimeoutError("etcd: no leader")

    async def wait_new_term_commit(
        self, old_term: int, exclude: int, timeout_s: float = 60
    ) -> float | None:
        """Wall time at which a survivor reports a leader of a term > old_term whose commit
        index passed every survivor's commit index seen right after the kill (no old-term
        commit can happen once its leader is dead, so that is the new term's first commit)."""

        def one(i: int) -> tuple[int, int, int] | None:
            st = self.status(i, 0.5)
            if st is None:
                return None
            header = st.get("header")
            term = st.get("raftTerm", header.get("raft_term") if isinstance(header, dict) else 0)
            return int(str(st.get("leader", 0))), int(str(term)), int(str(st.get("raftIndex", 0)))

        survivors = [i for i, p in self.procs.items() if i != exclude and p.alive()]
        base = max((v[2] for i in survivors if (v := one(i)) is not None), default=0)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            views = await asyncio.gather(*(asyncio.to_thread(one, i) for i in survivors))
            now = time.time()
            for v in views:
                if v is not None and v[0] != 0 and v[1] > old_term and v[2] > base:
                    return now
            await asyncio.sleep(0.005)
        return None

    def endpoints_leader_first(self) -> list[str]:
        lid, _ = self.leader()
        return [f"127.0.0.1:{self.client_ports[lid]}"] + [
            f"127.0.0.1:{p}" for i, p in self.client_ports.items() if i != lid
        ]

    def cpu(self) -> float:
        return sum(p.cpu() for p in self.procs.values())

    def kill(self, i: int) -> float:
        return self.procs[i].kill()

    def restart(self, i: int) -> None:
        p = self.procs[i]
        p.argv = [a for a in p.argv if not a.startswith("--initial-cluster-state")]
        p.argv.append("--initial-cluster-state=existing")
        p.start()

    def wait_member_up(self, i: int, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            st = self.status(i)
            if st is not None and str(st.get("leader", "0")) not in ("0", "None"):
                return
            time.sleep(0.05)

    def stop(self) -> None:
        for p in self.procs.values():
            p.stop()

"""PySyncObj 0.3.17 for the benchmark: 3 processes on loopback with the journal file on.

Role: start the members (bench/peers/pysyncobj_node.py), find the leader over their control
sockets, and ask the leader to run the closed-loop load in its own process. CPU is summed over
the 3 processes (it includes the load generator, which runs inside the leader).
Not durable (see pysyncobj_node.py): an upper bound for a non-durable Raft.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import Proc, free_ports

NODE_SCRIPT = Path(__file__).with_name("pysyncobj_node.py")


class PySyncObjCluster:
    name = "pysyncobj"

    def __init__(self, base: Path) -> None:
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        ports = free_ports(6)
        self.raft = {i: f"127.0.0.1:{ports[i - 1]}" for i in (1, 2, 3)}
        self.control = {i: ports[i + 2] for i in (1, 2, 3)}
        self.procs: dict[int, Proc] = {}
        for i in (1, 2, 3):
            partners = ",".join(a for j, a in self.raft.items() if j != i)
            argv = [sys.executable, str(NODE_SCRIPT), self.raft[i], partners]
            argv += [str(base / f"journal-{i}"), str(self.control[i])]
            self.procs[i] = Proc(f"pysyncobj-{i}", argv, base / f"node-{i}.log")

    def _ask(self, i: int, req: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
        try:
            with socket.create_connection(("127.0.0.1", self.control[i]), timeout=timeout_s) as s:
                s.sendall(json.dumps(req).encode() + b"\n")
                f = s.makefile("rb")
                line = f.readline()
                doc: dict[str, Any] = json.loads(line)
                return doc
        except (OSError, ValueError):
            return None

    def start(self) -> None:
        for p in self.procs.values():
            p.start()
        self.leader()

    def leader(self, timeout_s: float = 30) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for i in self.procs:
                st = self._ask(i, {"cmd": "status"}, 1.0)
                if st is not None and st.get("leader"):
                    return i
            time.sleep(0.1)
        raise TimeoutError("PySyncObj: no leader")

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values() if p.alive()]

    def cpu(self) -> float:
        return sum(p.cpu() for p in self.procs.values())

    def load(self, clients: int, seconds: float, warmup: float, size: int) -> dict[str, Any]:
        lid = self.leader()
        req = {"cmd": "load", "clients": clients, "seconds": seconds, "warmup": warmup}
        req["size"] = size
        r = self._ask(lid, req, seconds + warmup + 60)
        if r is None:
            raise RuntimeError("PySyncObj: the load run did not answer")
        return r

    def stop(self) -> None:
        for p in self.procs.values():
            p.stop()

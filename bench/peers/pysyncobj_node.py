"""One PySyncObj 0.3.17 member for the benchmark, with its load generator inside.

Run as a script: `python bench/peers/pysyncobj_node.py SELF PARTNERS JOURNAL CONTROL_PORT`.
A replicated `append(value)` (the value is kept only as a counter: the journal holds it) on a
`SyncObj` with `journalFile` on. A line-JSON control socket answers `{"cmd": "status"}` and
`{"cmd": "load", "clients": N, "seconds": S, "warmup": W, "size": B}`: N closed-loop chains on this
process, each submitting one command and waiting for its commit callback before the next
(latency = submit -> callback with SUCCESS), the same closed-loop design as bench/goload.

Durability, said plainly: PySyncObj writes its journal to an mmap that is not fsynced before
it answers, and it does not persist currentTerm/votedFor (its issue #84): its numbers are an
upper bound for a non-durable Raft, not a like-for-like comparison with fsyncing systems.
"""

from __future__ import annotations

import json
import socketserver
import sys
import threading
import time
from typing import Any

from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf, replicated  # type: ignore[import-untyped]


class Log(SyncObj):  # type: ignore[misc]
    def __init__(self, self_addr: str, partners: list[str], conf: SyncObjConf) -> None:
        super().__init__(self_addr, partners, conf)
        self.count = 0

    @replicated  # type: ignore[untyped-decorator]
    def append(self, value: bytes) -> int:
        self.count += 1
        return self.count


def run_load(obj: Log, clients: int, seconds: float, warmup: float, size: int) -> dict[str, Any]:
    value = b"x" * size
    lat: list[float] = []
    errors = [0]
    lock = threading.Lock()
    start = time.monotonic()
    measure_from = start + warmup
    end = measure_from + seconds
    finished = threading.Event()
    active = [clients]

    def submit() -> None:
        t0 = time.monotonic()

        def done(_result: Any, err: int) -> None:
            now = time.monotonic()
            with lock:
                if err == FAIL_REASON.SUCCESS:
                    if t0 >= measure_from and now <= end:
                        lat.append(now - t0)
                elif t0 >= measure_from:
                    errors[0] += 1
                if now >= end:
                    active[0] -= 1
                    if active[0] == 0:
                        finished.set()
                    return
            submit()

        obj.append(value, callback=done)

    for _ in range(clients):
        submit()
    finished.wait(seconds + warmup + 30)
    lat.sort()

    def q(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * (len(lat) - 1)))] * 1000 if lat else float("nan")

    cdf = [[q(i / 100), i / 100] for i in range(101)]
    cdf += [[q(p), p] for p in (0.995, 0.999, 0.9995, 0.9999)]
    cdf.sort(key=lambda x: x[1])
    return {
        "clients": clients,
        "ops": len(lat),
        "errors": errors[0],
        "elapsed_s": seconds,
        "ops_per_s": len(lat) / seconds,
        "p50_ms": q(0.5),
        "p99_ms": q(0.99),
        "p999_ms": q(0.999),
        "max_ms": lat[-1] * 1000 if lat else float("nan"),
        "cdf": cdf,
    }


def main() -> None:
    self_addr, partners, journal, control_port = sys.argv[1:5]
    conf = SyncObjConf(journalFile=journal, fullDumpFile=journal + ".dump")
    obj = Log(self_addr, [p for p in partners.split(",") if p], conf)

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            for raw in self.rfile:
                req = json.loads(raw)
                if req["cmd"] == "status":
                    leader = obj._getLeader()
                    out: dict[str, Any] = {
                        "leader": obj._isLeader(),
                        "leader_addr": None if leader is None else str(leader),
                    }
                else:
                    out = run_load(obj, req["clients"], req["seconds"], req["warmup"], req["size"])
                self.wfile.write(json.dumps(out).encode() + b"\n")
                self.wfile.flush()

    server = socketserver.ThreadingTCPServer(("127.0.0.1", int(control_port)), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()

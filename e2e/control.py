"""The kubelet stand-in's fault-injection port, for tests (loopback HTTP, JSON answers).

- `POST /kill?namespace=NS&pod=NAME`: kill -9 the pod's process (the stand-in restarts it, as a
  kubelet restarts a crashed container);
- `POST /lose-disk?namespace=NS&pvc=NAME`: wipe the directory of the PV bound to the claim and
  recreate it empty (a replaced disk under the same volume);
- `GET /pods`: the pods the stand-in runs (pid, ip, readiness, restarts, volume dirs, argv).

The port is written to STATE/control.port. Invariant: every action holds the stand-in's lock,
so it never races the sync loop. It sees the stand-in only as a `Standin` (its lock, its pod
runs, its API client and state dir) and kills a pod as the stand-in's loop does (podrun.kill),
so it imports neither kubelet.py (which starts it) nor anything that imports kubelet.py.
"""

from __future__ import annotations

import json
import shutil
import signal
import threading
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlparse

import podrun
import volumes


class Standin(Protocol):
    """What the fault port needs of the kubelet stand-in (kubelet.Kubelet is one)."""

    lock: AbstractContextManager[Any]
    runs: dict[str, podrun.PodRun]
    core: Any  # kubernetes.client.CoreV1Api
    state: Path


def fault(k: Standin, action: str, q: dict[str, str]) -> tuple[int, Any]:
    with k.lock:
        if action == "/pods":
            return 200, [
                {
                    "namespace": r.namespace,
                    "name": r.name,
                    "ip": r.ip,
                    "pid": r.proc.pid if r.proc else None,
                    "ready": r.ready,
                    "restarts": r.restarts,
                    "volumes": r.pv_dirs,
                    "argv": r.argv,
                }
                for r in k.runs.values()
            ]
        if action == "/kill":
            for r in k.runs.values():
                if (r.namespace, r.name) == (q["namespace"], q["pod"]) and r.proc:
                    podrun.kill(r, signal.SIGKILL)
                    return 200, {"killed": r.proc.pid}
            return 404, {"error": "no such running pod"}
        if action == "/lose-disk":
            path = volumes.pv_dir_of_claim(k.core, k.state, q["namespace"], q["pvc"])
            if path is None:
                return 404, {"error": "no bound PV for that claim"}
            shutil.rmtree(path)
            path.mkdir(parents=True)
            return 200, {"wiped": str(path)}
    return 404, {"error": "unknown action"}


def serve(k: Standin) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def handle_any(self) -> None:
            u = urlparse(self.path)
            q = {key: v[0] for key, v in parse_qs(u.query).items()}
            try:
                code, body = fault(k, u.path, q)
            except Exception as e:
                code, body = 500, {"error": repr(e)}
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = handle_any  # noqa: N815 - http.server names

        def log_message(self, format: str, *args: Any) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    (k.state / "control.port").write_text(str(srv.server_address[1]))
    return srv

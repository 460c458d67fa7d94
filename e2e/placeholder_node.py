"""Placeholder for the metaquorum node process until the node exists (a later issue).

Role: what the operator's StatefulSet pods run in the e2e tier today. It follows the node's
container contract (docs/operator.md): reads its config file (--config), keeps a data directory
(METAQUORUM_DATA_DIR) and serves HTTP on $POD_IP:$METAQUORUM_HTTP_PORT with /healthz and
/readyz. Extra endpoints for tests: /status (JSON: data-dir marker, whether this start found an
empty directory, the config file), /resolve?host=NAME (how this process resolves a name),
/unready?seconds=N and /unhealthy?seconds=N (/readyz, /healthz answer 503 for N seconds).
Invariant: the marker file in the data dir is written once per empty directory, so a test can
tell a kept disk from a new one. Stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=os.environ.get("METAQUORUM_CONFIG", ""))
    ap.add_argument("--data-dir", default=os.environ.get("METAQUORUM_DATA_DIR", "."))
    ap.add_argument("--host", default=os.environ.get("POD_IP", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("METAQUORUM_HTTP_PORT", "8080")))
    args, _ = ap.parse_known_args()
    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    marker = data / "placeholder-marker"
    fresh = not marker.exists()
    if fresh:
        marker.write_text(uuid.uuid4().hex)
    config = Path(args.config).read_text() if args.config and Path(args.config).exists() else ""
    unready_until = [0.0]
    unhealthy_until = [0.0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            u = urlparse(self.path)
            if u.path == "/readyz" and time.monotonic() < unready_until[0]:
                self.send_error(503, "made unready by /unready")
                return
            if u.path == "/healthz" and time.monotonic() < unhealthy_until[0]:
                self.send_error(503, "made unhealthy by /unhealthy")
                return
            if u.path in ("/healthz", "/readyz"):
                body: object = "ok"
            elif u.path in ("/unready", "/unhealthy"):
                seconds = float(parse_qs(u.query)["seconds"][0])
                until = unready_until if u.path == "/unready" else unhealthy_until
                until[0] = time.monotonic() + seconds
                body = {u.path[1:] + "_for": seconds}
            elif u.path == "/status":
                body = {
                    "marker": marker.read_text() if marker.exists() else None,
                    "fresh": fresh,
                    "config": config,
                    "pod": os.environ.get("POD_NAME"),
                    "data_dir": str(data),
                }
            elif u.path == "/resolve":
                host = parse_qs(u.query)["host"][0]
                try:
                    body = sorted({a[4][0] for a in socket.getaddrinfo(host, 80)})
                except OSError as e:
                    body = {"error": str(e)}
            else:
                self.send_error(404)
                return
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *a: object) -> None:
            pass

    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"placeholder node on {args.host}:{args.port} data={data} fresh={fresh}", flush=True)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

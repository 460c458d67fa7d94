"""Placeholder for the metaquorum node process in the e2e tier, until the quorum operations land.

Role: what the operator's StatefulSet pods run in the e2e tier today. It follows the node's
container contract (docs/operator.md) the way `metaquorum server start --config F` reads it:
properties from the config file, then `METAQUORUM_<KEY>` environment overrides (key upper-cased,
dots as underscores), and uses `node.id`, `metadata.log.dir` and `metaquorum.http.listener`
(host:port) from the result. Serves /healthz and /readyz on that listener. Extra endpoints for
tests: /status (JSON: node id, data-dir marker, whether this start found an empty directory, the
config file), /resolve?host=NAME (how this process resolves a name), /unready?seconds=N and
/unhealthy?seconds=N (/readyz, /healthz answer 503 for N seconds).
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


def load_properties(path: str) -> dict[str, str]:
    props: dict[str, str] = {}
    if path and Path(path).exists():
        for line in Path(path).read_text().splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "!")) and "=" in line:
                key, value = line.split("=", 1)
                props[key.strip()] = value.strip()
    for name, value in os.environ.items():
        if name.startswith("METAQUORUM_") and len(name) > len("METAQUORUM_"):
            key = name[len("METAQUORUM_") :].lower().replace("__", "-").replace("_", ".")
            props[key] = value
    return props


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="")
    args, _ = ap.parse_known_args()
    props = load_properties(args.config)
    data = Path(props.get("metadata.log.dir", "."))
    host, _, port = props.get("metaquorum.http.listener", "127.0.0.1:8080").rpartition(":")
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
                    "node_id": props.get("node.id"),
                    "marker": marker.read_text() if marker.exists() else None,
                    "fresh": fresh,
                    "config": config,
                    "pod": os.environ.get("POD_NAME"),
                    "data_dir": str(data),
                    "listeners": props.get("listeners"),
                }
            elif u.path == "/resolve":
                name = parse_qs(u.query)["host"][0]
                try:
                    body = sorted({a[4][0] for a in socket.getaddrinfo(name, 80)})
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

    srv = ThreadingHTTPServer((host, int(port)), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(
        f"placeholder node {props.get('node.id')} on {host}:{port} data={data} fresh={fresh}",
        flush=True,
    )
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Readiness probes for the kubelet stand-in: HTTP and TCP probes really called, exec run.

Role: decide a pod's Ready condition the way the kubelet does: an HTTP GET answered 200-399, a TCP
connect that succeeds, or an exec command that exits 0; no probe means ready once running.
Named ports resolve through the container's `ports`. The stand-in applies successThreshold /
failureThreshold for readiness and initialDelaySeconds / failureThreshold for liveness (a failed
liveness probe kills the process, which is then restarted). Invariant: never raises, a probe
that cannot run is a failed probe.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any


def resolve_port(port: int | str, container: Mapping[str, Any]) -> int:
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ValueError(f"no container port named {port!r}")


def step(ok: bool, failures: int) -> int:
    """Consecutive failures after one probe result."""
    return 0 if ok else failures + 1


def check(
    probe: Mapping[str, Any] | None, ip: str, container: Mapping[str, Any], env: Mapping[str, str]
) -> bool:
    if not probe:
        return True
    timeout = float(probe.get("timeoutSeconds") or 1)
    try:
        if "httpGet" in probe:
            h = probe["httpGet"]
            port = resolve_port(h["port"], container)
            scheme = str(h.get("scheme", "HTTP")).lower()
            url = f"{scheme}://{h.get('host') or ip}:{port}{h.get('path', '/')}"
            req = urllib.request.Request(
                url, headers={x["name"]: x["value"] for x in h.get("httpHeaders") or []}
            )
            try:
                with urllib.request.urlopen(req, timeout=timeout) as r:
                    return 200 <= r.status < 400
            except urllib.error.HTTPError as e:
                return 200 <= e.code < 400
        if "tcpSocket" in probe:
            t = probe["tcpSocket"]
            port = resolve_port(t["port"], container)
            with contextlib.closing(
                socket.create_connection((t.get("host") or ip, port), timeout=timeout)
            ):
                return True
        if "exec" in probe:
            rc = subprocess.run(
                probe["exec"]["command"],
                check=False,
                env=dict(env),
                timeout=timeout,
                capture_output=True,
            ).returncode
            return rc == 0
    except Exception:
        return False
    return False

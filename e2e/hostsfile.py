"""The cluster DNS of the kubelet stand-in, as a hosts file that pod processes read.

Role: stable network identities without a DNS server. For every pod with an IP: its
`hostname.subdomain.namespace.svc.cluster.local` name (and the shorter forms) when it sets
`hostname` and `subdomain` (StatefulSet pods behind their headless Service). For every Service
with a selector: `name.namespace.svc.cluster.local` (and shorter forms) mapping to the IPs of its
ready pods (publishNotReadyAddresses counts not-ready pods too); there is no kube-proxy, so a
ClusterIP Service resolves like a headless one. Processes resolve these names through
e2e/standin_site/sitecustomize.py (env METAQUORUM_E2E_HOSTS).

On the real-kubelet target the pods resolve through CoreDNS; `follow` keeps the same file from
the API for the test process and Kafka's Java tool (`-Djdk.net.hosts.file`), which cannot be
pointed at CoreDNS without changing the machine's /etc/resolv.conf.

Invariants: the file is replaced atomically and only when its content changes; `entries` is
pure.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

DOMAIN = "cluster.local"


def _names(base: str, ns: str) -> list[str]:
    return [f"{base}.{ns}.svc.{DOMAIN}", f"{base}.{ns}.svc", f"{base}.{ns}"]


def _ready(pod: Mapping[str, Any]) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def entries(
    pods: Iterable[Mapping[str, Any]], services: Iterable[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """(ip, name) pairs, sorted."""
    out: set[tuple[str, str]] = set()
    live = [
        p
        for p in pods
        if (p.get("status") or {}).get("podIP") and not p["metadata"].get("deletionTimestamp")
    ]
    for p in live:
        spec, ns, ip = p["spec"], p["metadata"]["namespace"], p["status"]["podIP"]
        if spec.get("hostname") and spec.get("subdomain"):
            for n in _names(f"{spec['hostname']}.{spec['subdomain']}", ns):
                out.add((ip, n))
    for s in services:
        sel = (s.get("spec") or {}).get("selector")
        if not sel:
            continue
        ns = s["metadata"]["namespace"]
        every = bool(s["spec"].get("publishNotReadyAddresses"))
        for p in live:
            labels = p["metadata"].get("labels") or {}
            if p["metadata"]["namespace"] != ns:
                continue
            if all(labels.get(k) == v for k, v in sel.items()) and (every or _ready(p)):
                for n in _names(s["metadata"]["name"], ns):
                    out.add((p["status"]["podIP"], n))
    return sorted(out)


def write(
    path: Path, pods: Iterable[Mapping[str, Any]], services: Iterable[Mapping[str, Any]]
) -> None:
    text = "".join(f"{ip} {name}\n" for ip, name in entries(pods, services))
    if path.exists() and path.read_text() == text:
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def follow(api: Any, path: Path, stop: threading.Event, interval: float = 0.25) -> None:
    """Rewrite `path` from the API's pods and Services every `interval` s until `stop`
    (api: a kubernetes.client.ApiClient). API errors are retried on the next round."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    while not stop.is_set():
        try:
            pods = core.list_pod_for_all_namespaces().items
            services = core.list_service_for_all_namespaces().items
            write(
                path,
                api.sanitize_for_serialization(pods),
                api.sanitize_for_serialization(services),
            )
        except Exception as e:  # an API blip (or the apiserver stopping at teardown)
            print(f"hostsfile.follow: {e}", file=sys.stderr)
        stop.wait(interval)

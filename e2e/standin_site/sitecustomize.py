"""Name resolution for processes run by the kubelet stand-in (imported by Python at startup).

Role: pods reach each other by their cluster DNS names. When METAQUORUM_E2E_HOSTS names a hosts
file (kept current by the stand-in, e2e/hostsfile.py), socket.getaddrinfo / gethostbyname look
names up there first and fall back to the system resolver. Lookups re-read the file when its
mtime changes. uvloop resolves names inside libuv, so asyncio.open_connection is wrapped too
(the name is resolved here first); metaquorum's own client resolves through
socket.getaddrinfo. Only loaded through PYTHONPATH set by the stand-in; inert otherwise.
"""

from __future__ import annotations

import os
import socket
from typing import Any

_PATH = os.environ.get("METAQUORUM_E2E_HOSTS")
_cache: dict[str, list[str]] = {}
_mtime = -1.0


def _lookup(host: str) -> list[str]:
    global _cache, _mtime
    assert _PATH is not None
    try:
        m = os.stat(_PATH).st_mtime
    except OSError:
        return []
    if m != _mtime:
        table: dict[str, list[str]] = {}
        with open(_PATH) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    table.setdefault(parts[1].lower(), []).append(parts[0])
        _cache, _mtime = table, m
    return _cache.get(host.rstrip(".").lower(), [])


if _PATH:
    _getaddrinfo = socket.getaddrinfo
    _gethostbyname = socket.gethostbyname

    def getaddrinfo(  # noqa: PLR0917 - socket.getaddrinfo signature
        host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> Any:
        if isinstance(host, bytes):
            host = host.decode()
        ips = _lookup(host) if isinstance(host, str) else []
        if not ips:
            return _getaddrinfo(host, port, family, type, proto, flags)
        out = []
        for ip in ips:
            out.extend(_getaddrinfo(ip, port, family, type, proto, flags | socket.AI_NUMERICHOST))
        return out

    def gethostbyname(host: str) -> str:
        ips = _lookup(host)
        return ips[0] if ips else _gethostbyname(host)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.gethostbyname = gethostbyname

    # uvloop resolves inside libuv, never through socket.getaddrinfo: resolve the name before
    # asyncio.open_connection hands it to the loop (TLS keeps the name for verification).
    import asyncio
    import asyncio.streams

    _open_connection = asyncio.open_connection

    async def open_connection(host: Any = None, port: Any = None, **kwargs: Any) -> Any:
        ips = _lookup(host) if isinstance(host, str) else []
        if ips:
            if kwargs.get("ssl") and "server_hostname" not in kwargs:
                kwargs["server_hostname"] = host
            host = ips[0]
        return await _open_connection(host, port, **kwargs)

    asyncio.open_connection = open_connection  # type: ignore[assignment]
    asyncio.streams.open_connection = open_connection  # type: ignore[assignment]

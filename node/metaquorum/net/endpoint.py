"""Endpoints of a KRaft quorum: `host:port` as Kafka's configs and tools write them.

Role: the one place both the node (runtime) and its clients (admin, the operator through the
admin client) parse and print an endpoint; `ConfigError` is the one-line error a user reads
(key, bad value, the form wanted). Invariants: the port is 1-65535; an IPv6 host is printed in
brackets and parsed from them; an empty host means localhost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class ConfigError(ValueError):
    """A one-line message naming the key and the fix."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


_HOST_PORT = re.compile(r"(\[[^\]]*\]|[^:\[\]]*):(\d{1,5})")


def parse_endpoint(text: str, key: str) -> Endpoint:
    m = _HOST_PORT.fullmatch(text.strip())
    if not m or not 0 < int(m.group(2)) < 65536:
        raise ConfigError(f"{key}: {text!r} is not host:port (port 1-65535)")
    host = m.group(1)
    host = host[1:-1] if host.startswith("[") else host
    return Endpoint(host or "localhost", int(m.group(2)))

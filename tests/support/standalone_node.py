"""A one-voter node formatted `--standalone` in a temporary directory, for in-process runtime
tests (the properties a KRaft controller needs, and its formatted log directory)."""

from __future__ import annotations

from pathlib import Path

from metaquorum.protocol.types import Uuid
from metaquorum.runtime.local_quorum import free_ports
from metaquorum.storage.formatter import ServerConfig, format_storage

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def format_standalone(tmp_path: Path) -> tuple[dict[str, str], int, Uuid]:
    """Node 1's properties, its port and its directory id, its storage formatted standalone."""
    (port,) = free_ports(1)
    props = {
        "process.roles": "controller",
        "node.id": "1",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{port}",
        "metadata.log.dir": str(tmp_path / "meta"),
    }
    cfg = tmp_path / "server.properties"
    cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    result = format_storage(ServerConfig.load(cfg), CLUSTER, standalone=True)
    return props, port, result.directory_ids[tmp_path / "meta"]

"""A runtime `Driver` for unit tests: node 1 of a static 3-voter quorum on a freshly formatted
data dir, peers on ports nothing listens on (requests fail; no real time is needed), fsync
off, and a `ManualClock` the test moves.
"""

from __future__ import annotations

from pathlib import Path

from metaquorum.runtime.clock import ManualClock
from metaquorum.runtime.config import config_from_properties
from metaquorum.runtime.driver import Driver
from metaquorum.storage.formatter import ServerConfig, format_storage
from metaquorum.storage.log import LogConfig
from metaquorum.storage.replica import open_replica_storage

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def static_quorum_driver(tmp_path: Path, clock: ManualClock) -> Driver:
    props = {
        "process.roles": "controller",
        "node.id": "1",
        "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://127.0.0.1:1",
        "controller.quorum.voters": "1@127.0.0.1:1,2@127.0.0.1:2,3@127.0.0.1:3",
        "metadata.log.dir": str(tmp_path / "meta"),
    }
    cfg = tmp_path / "server.properties"
    cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    format_storage(ServerConfig.load(cfg), CLUSTER)
    storage = open_replica_storage(tmp_path / "meta", node_id=1, config=LogConfig(fsync=False))
    return Driver(config_from_properties(props), storage, [], clock=clock)

"""A local N-voter quorum on loopback: configs, formatting, processes (`make run`, tests).

Role: write one `server.properties` per node (static `controller.quorum.voters`; with
`dynamic=True` `controller.quorum.bootstrap.servers` and a format with `--initial-controllers`;
with `standalone=True` the bootstrap servers of every node, node 1 formatted `--standalone` and
the others `--no-initial-controllers`, to join later; free loopback ports), format each
`metadata.log.dir` as `metaquorum storage format` does, and start/stop/kill
`metaquorum server start` processes. Used by `python -m metaquorum.runtime.local_quorum` (the
`make run` target: status, then a live status line until Ctrl-C, then a clean stop) and by the
integration tests.

Invariants: every process this module starts is stopped by `stop_all()` (SIGTERM, then SIGKILL
after a grace period); ports are picked free at creation; a node's directory is never reused
across clusters unless asked.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metaquorum.protocol.types import Uuid
from metaquorum.storage.formatter import DynamicVoter, ServerConfig, format_storage

LISTENER = "CONTROLLER"


def free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@dataclass
class LocalNode:
    node_id: int
    port: int
    http_port: int
    directory: Path
    config_path: Path
    process: subprocess.Popen[bytes] | None = None
    log_path: Path = field(default_factory=Path)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def status(self, timeout_s: float = 1.0) -> dict[str, Any] | None:
        url = f"http://127.0.0.1:{self.http_port}/status"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as r:
                doc: dict[str, Any] = json.loads(r.read())
                return doc
        except (OSError, ValueError):
            return None


class LocalQuorum:
    def __init__(
        self,
        base: Path,
        voters: int = 3,
        *,
        observers: int = 0,
        cluster_id: str | None = None,
        extra: dict[str, str] | None = None,
        dynamic: bool = False,
        standalone: bool = False,
    ) -> None:
        self.base = base
        self.dynamic = dynamic or standalone
        self.standalone = standalone
        self.cluster_id = cluster_id or str(Uuid.random())
        n = voters + observers
        ports = free_ports(2 * n)
        self.nodes: dict[int, LocalNode] = {}
        for i in range(1, n + 1):
            d = base / f"node-{i}"
            self.nodes[i] = LocalNode(
                i, ports[2 * i - 2], ports[2 * i - 1], d / "data", d / "server.properties"
            )
            self.nodes[i].log_path = d / "node.log"
        # Standalone: one voter; the others start as observers and are added (`voters` then
        # counts the nodes that may become voters).
        self.voter_ids = [1] if standalone else list(range(1, voters + 1))
        self.extra = extra or {}
        # A dynamic quorum's voters carry directory ids (`--initial-controllers`).
        self.directory_ids = (
            {i: Uuid.random() for i in self.voter_ids} if dynamic and not standalone else {}
        )

    def voters_string(self) -> str:
        return ",".join(f"{i}@127.0.0.1:{self.nodes[i].port}" for i in self.voter_ids)

    def bootstrap_servers(self) -> str:
        ids = list(self.nodes) if self.standalone else self.voter_ids
        return ",".join(f"127.0.0.1:{self.nodes[i].port}" for i in ids)

    def initial_controllers(self) -> list[DynamicVoter]:
        return [
            DynamicVoter(i, "127.0.0.1", self.nodes[i].port, self.directory_ids[i])
            for i in self.voter_ids
        ]

    def write_configs(self) -> None:
        for node in self.nodes.values():
            node.config_path.parent.mkdir(parents=True, exist_ok=True)
            props = {
                "node.id": str(node.node_id),
                "process.roles": "controller",
                "controller.listener.names": LISTENER,
                "listeners": f"{LISTENER}://127.0.0.1:{node.port}",
                **(
                    {"controller.quorum.bootstrap.servers": self.bootstrap_servers()}
                    if self.dynamic
                    else {"controller.quorum.voters": self.voters_string()}
                ),
                "metadata.log.dir": str(node.directory),
                "metaquorum.http.listener": f"127.0.0.1:{node.http_port}",
                "metaquorum.http.snapshot.enable": "true",  # loopback only
                **self.extra,
            }
            text = "".join(f"{k}={v}\n" for k, v in props.items())
            node.config_path.write_text(text, encoding="utf-8")

    def format(self, node_ids: list[int] | None = None, cluster_id: str | None = None) -> None:
        for nid in node_ids or list(self.nodes):
            node = self.nodes[nid]
            config = ServerConfig.load(node.config_path)
            if self.standalone:
                format_storage(
                    config,
                    cluster_id or self.cluster_id,
                    standalone=nid == 1,
                    no_initial_controllers=nid != 1,
                )
                continue
            format_storage(
                config,
                cluster_id or self.cluster_id,
                initial_controllers=self.initial_controllers() if self.dynamic else None,
            )

    def start(
        self,
        nid: int,
        extra_env: dict[str, str] | None = None,
        wrapper: Sequence[str] = (),
    ) -> LocalNode:
        """Start node `nid`; `wrapper` prefixes the command (it must exec the node, keeping
        the pid: e.g. `fiu-run -x` for storage fault injection)."""
        node = self.nodes[nid]
        env = dict(os.environ, **(extra_env or {}))
        log = node.log_path.open("ab")
        node.process = subprocess.Popen(
            [
                *wrapper,
                sys.executable,
                "-m",
                "metaquorum.cli.server_cmd",
                "start",
                "--config",
                str(node.config_path),
            ],
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
        )
        log.close()
        return node

    def start_all(self) -> None:
        for nid in self.nodes:
            self.start(nid)

    def signal(self, nid: int, sig: int) -> None:
        proc = self.nodes[nid].process
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, sig)

    def kill(self, nid: int) -> None:
        self.signal(nid, signal.SIGKILL)
        proc = self.nodes[nid].process
        if proc is not None:
            proc.wait(10)

    def stop(self, nid: int, grace_s: float = 10.0, *, signalled: bool = False) -> int | None:
        """SIGTERM (unless `signalled` already), wait `grace_s`, then SIGKILL."""
        proc = self.nodes[nid].process
        if proc is None:
            return None
        if proc.poll() is None:
            if not signalled:
                self.signal(nid, signal.SIGCONT)
                self.signal(nid, signal.SIGTERM)
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        return proc.returncode

    def stop_all(self) -> None:
        """SIGTERM to every node at once, then wait for each (a whole-quorum stop: stopping
        one at a time would hand leadership from node to node)."""
        for nid, node in self.nodes.items():
            if node.process is not None and node.process.poll() is None:
                self.signal(nid, signal.SIGCONT)
                self.signal(nid, signal.SIGTERM)
        for nid in self.nodes:
            self.stop(nid, signalled=True)

    def statuses(self) -> dict[int, dict[str, Any] | None]:
        return {nid: n.status() for nid, n in self.nodes.items() if n.process is not None}

    def leader(self, exclude: set[int] | None = None) -> tuple[int, int] | None:
        """(leader id, epoch) agreed by the live leader itself, or None."""
        for nid, st in self.statuses().items():
            if nid in (exclude or set()) or st is None:
                continue
            if st["state"] == "leader" and st["leader_id"] == nid:
                return nid, int(st["epoch"])
        return None

    def wait_for_leader(
        self, timeout_s: float = 20.0, exclude: set[int] | None = None, min_epoch: int = 0
    ) -> tuple[int, int]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.leader(exclude)
            if found is not None and found[1] >= min_epoch:
                return found
            time.sleep(0.05)
        raise TimeoutError(f"no leader within {timeout_s}s: {self.statuses()}{self.unanswered()}")

    def unanswered(self, lines: int = 5) -> str:
        """For each started node whose /status does not answer: whether its process exited
        (and how) and the tail of its log, so a timeout names a dead node's cause."""
        out = []
        for nid, node in self.nodes.items():
            if node.process is None or node.status() is not None:
                continue
            rc = node.process.poll()
            state = "running, /status not answering" if rc is None else f"exited rc={rc}"
            try:
                tail = node.log_path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                tail = []
            out.append(f"\n  node {nid}: {state}; log tail:" + "".join(f"\n    {t}" for t in tail))
        return "".join(out)


def _status_line(q: LocalQuorum, started: float, last: dict[str, float]) -> str:
    sts = q.statuses()
    leader = q.leader()
    if leader is None:
        return "leader: none (electing)"
    lid, epoch = leader
    st = sts[lid] or {}
    hw = st.get("high_watermark", -1)
    replicas = st.get("replicas", [])
    voters = " ".join(f"{r['id']}:{r['lag']}" for r in replicas if r["kind"] == "voter")
    observers = " ".join(f"{r['id']}:{r['lag']}" for r in replicas if r["kind"] == "observer")
    now = time.monotonic()
    appended = float(st.get("appended_records", 0))
    rate = (appended - last.get("appended", appended)) / max(1e-3, now - last.get("t", now))
    last.update(appended=appended, t=now)
    return (
        f"leader {lid} epoch {epoch} HW {hw} voters[{voters}] observers[{observers or '-'}] "
        f"appends/s {rate:.0f} up {now - started:.0f}s"
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="run a local KRaft quorum on loopback")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path(os.environ.get("TMPDIR", "/tmp")) / "metaquorum-local-quorum",
    )
    parser.add_argument("--voters", type=int, default=3)
    parser.add_argument(
        "--static",
        action="store_true",
        help="controller.quorum.voters (KIP-595) instead of a dynamic quorum (KIP-853)",
    )
    args = parser.parse_args(argv)
    import shutil

    # SIGTERM and SIGHUP stop the quorum the way Ctrl-C does, so no node outlives its launcher.
    # SIGINT too, explicitly: started from a background job of a non-interactive shell (a CI
    # script, `make run &`), SIGINT arrives ignored, and Python then installs no Ctrl-C handler.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)

    shutil.rmtree(args.dir, ignore_errors=True)
    # Dynamic (the default): node 1 formatted --standalone, the others --no-initial-controllers
    # with controller.quorum.auto.join.enable: they find the leader through the bootstrap
    # servers, catch up as observers and add themselves, one voter change at a time.
    dynamic = not args.static
    q = LocalQuorum(
        args.dir.resolve(),
        args.voters,
        standalone=dynamic,
        extra={"controller.quorum.auto.join.enable": "true"} if dynamic else None,
    )
    q.write_configs()
    q.format()
    if dynamic:
        print(
            f"cluster id {q.cluster_id}; node 1 formatted --standalone, nodes 2-{args.voters} "
            f"join it (auto-join); bootstrap servers {q.bootstrap_servers()}"
        )
    else:
        print(f"cluster id {q.cluster_id}; {args.voters} voters: {q.voters_string()}")
    print(f"logs and data under {args.dir}/node-N/")
    q.start_all()
    started = time.monotonic()
    try:
        lid, epoch = q.wait_for_leader(30)
        print(f"leader elected: node {lid}, epoch {epoch}")
        for nid, node in q.nodes.items():
            print(f"  node {nid}: kafka {node.address}  http://127.0.0.1:{node.http_port}/status")
        print(
            f"describe it: .venv/bin/metaquorum quorum --bootstrap-controller "
            f"{q.nodes[lid].address} describe --status   (Ctrl-C to stop)"
        )
        last: dict[str, float] = {}
        while True:
            line = _status_line(q, started, last)
            sys.stdout.write("\r\x1b[K" + line)
            sys.stdout.flush()
            time.sleep(1)
    except KeyboardInterrupt:
        print("\nstopping...")
    except TimeoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        q.stop_all()
        print("stopped.")
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())

"""The soak's quorum: 3 voters on mutual TLS, snapshots and log cleaning on; its two chores.

Role: `SoakQuorum` writes a throw-away PKI (`tests/support/pki.py`, openssl), formats a KIP-853
quorum (`--initial-controllers`, directory ids) of real `metaquorum server start` processes
on loopback (`LocalQuorum`), every listener on SSL with client auth required, small segments
(`metadata.log.segment.bytes`) and a small snapshot interval so log cleaning runs all the
time. Its chores, as an operator of the quorum does them:
- `transfer_leadership()`: POST /resign?epoch=N to the leader (Kafka's `RaftClient.resign`,
  what the operator's roll uses), then wait for a leader of a higher epoch;
- `replace(node)`: stop the node, `quorum remove-controller` its (id, directory id), wipe its
  data dir, format it `--no-initial-controllers` (a new directory id), start it, wait until
  it has caught up as an observer, `quorum add-controller --config` (our CLI, over mutual TLS
  with `--command-config`), wait until every live node sees it as a voter again.

Invariants: a chore raises `ChoreFailed` with the reason rather than leaving the quorum with
fewer than three voters unnoticed; every process started here is stopped by `stop()`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from metaquorum.net.endpoint import Endpoint
from metaquorum.net.tls import TlsContexts
from metaquorum.net.tls_settings import client_tls_settings
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.storage.formatter import ServerConfig, format_storage
from metaquorum.storage.meta_properties import read_meta_properties

from tests.support.pki import Pki, client_props, ssl_props

ELECTION = {
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
}


class ChoreFailed(AssertionError):
    pass


def _until(cond: Callable[[], bool], timeout_s: float, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if cond():
            return time.monotonic() - start
        time.sleep(0.2)
    raise ChoreFailed(f"timed out after {timeout_s:.0f}s waiting for {what}")


class SoakQuorum:
    def __init__(self, base: Path, *, segment_bytes: int, snapshot_bytes: int) -> None:
        self.base = base
        self.pki = Pki.create(base / "pki")
        extra = {
            **ELECTION,
            **ssl_props(self.pki.issue("node"), self.pki.ca),
            "metaquorum.http.resign.enable": "true",
            "metadata.log.segment.min.bytes": str(min(segment_bytes, 8 << 20)),
            "metadata.log.segment.bytes": str(segment_bytes),
            "metadata.log.max.record.bytes.between.snapshots": str(snapshot_bytes),
        }
        self.client_config = base / "client.properties"
        self.client_config.write_text(client_props(self.pki.ca, self.pki.issue("client")))
        props = dict(line.split("=", 1) for line in self.client_config.read_text().splitlines())
        settings = client_tls_settings(props)
        assert settings is not None
        self.tls = TlsContexts(settings)
        self.q = LocalQuorum(base / "q", 3, extra=extra, dynamic=True)

    def start(self) -> None:
        self.q.write_configs()
        self.q.format()
        self.q.start_all()
        self.q.wait_for_leader(60)

    def stop(self) -> None:
        self.q.stop_all()

    def endpoints(self) -> list[Endpoint]:
        return [Endpoint("127.0.0.1", n.port) for n in self.q.nodes.values()]

    def pid(self, nid: int) -> int | None:
        proc = self.q.nodes[nid].process
        return proc.pid if proc is not None and proc.poll() is None else None

    # --- chores ------------------------------------------------------------------------------
    def transfer_leadership(self) -> dict[str, object]:
        leader, epoch = self.q.wait_for_leader(30)
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.q.nodes[leader].http_port}/resign?epoch={epoch}",
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                code = r.status
        except urllib.error.HTTPError as e:
            code = e.code  # 409: leadership moved meanwhile; nothing to do this time
        start = time.monotonic()
        new, new_epoch = self.q.wait_for_leader(30, min_epoch=epoch + 1)
        return {
            "from": leader,
            "to": new,
            "epoch": new_epoch,
            "http": code,
            "took_s": round(time.monotonic() - start, 3),
        }

    def _cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        boot = ",".join(n.address for n in self.q.nodes.values())
        return subprocess.run(
            [
                *(sys.executable, "-m", "metaquorum.cli.quorum_cmd"),
                *("--bootstrap-controller", boot, "--command-config", str(self.client_config)),
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def _retry_cli(self, what: str, *args: str, already: str, timeout_s: float = 90) -> str:
        """Run until it succeeds, or answers `already` (an earlier attempt's change committed
        but its answer was lost)."""
        last = ""

        def once() -> bool:
            nonlocal last
            done = self._cli(*args)
            lines = (done.stdout + done.stderr).strip().splitlines()
            last = lines[-1] if lines else f"rc {done.returncode}"
            return done.returncode == 0 or already in last

        try:
            _until(once, timeout_s, what)
        except ChoreFailed as e:
            raise ChoreFailed(f"{e}; last answer: {last}") from None
        return last

    def voters_seen(self) -> dict[int, list[int]]:
        return {
            nid: sorted(st["voters"]) for nid, st in self.q.statuses().items() if st is not None
        }

    def replace(self, nid: int) -> dict[str, object]:
        node = self.q.nodes[nid]
        start = time.monotonic()
        meta = read_meta_properties(node.directory)
        if meta is None or meta.directory_id is None:
            raise ChoreFailed(f"node {nid} has no directory id to remove")
        self.q.stop(nid)
        removed = self._retry_cli(
            f"remove-controller {nid}",
            *("remove-controller", "--controller-id", str(nid)),
            *("--controller-directory-id", str(meta.directory_id)),
            already="VOTER_NOT_FOUND",
        )
        shutil.rmtree(node.directory)
        format_storage(
            ServerConfig.load(node.config_path), self.q.cluster_id, no_initial_controllers=True
        )
        self.q.start(nid)

        def caught_up() -> bool:
            sts = self.q.statuses()
            mine = sts.get(nid) or {}
            hws = [s["high_watermark"] for i, s in sts.items() if s and i != nid]
            return bool(hws) and mine.get("high_watermark", -1) >= min(hws) - 50

        caught = _until(caught_up, 120, f"node {nid} to catch up as an observer")
        added = self._retry_cli(
            f"add-controller {nid}",
            *("add-controller", "--config", str(node.config_path)),
            already="DUPLICATE_VOTER",
        )
        _until(
            lambda: all(nid in v for v in self.voters_seen().values()),
            60,
            f"every node to see {nid} as a voter again",
        )
        new_meta = read_meta_properties(node.directory)
        return {
            "node": nid,
            "old_directory_id": str(meta.directory_id),
            "new_directory_id": str(new_meta.directory_id if new_meta else None),
            "removed": removed,
            "added": added,
            "catch_up_s": round(caught, 2),
            "took_s": round(time.monotonic() - start, 2),
        }

    def write_pids(self, path: Path) -> None:
        """The node pids, for a clean-up after the harness itself was killed -9."""
        path.write_text(json.dumps({n: self.pid(n) for n in self.q.nodes}) + "\n")

"""A quorum of real `metaquorum server start` processes, each in its own network namespace
(tests/nemesis/netns.py) and under libfiu's preload (`fiu-run -x`), started through
`tests/nemesis/node_shim.py` (the real `server start` plus a clock seam), for the nemesis.

Role: write each node's `server.properties` (static `controller.quorum.voters` on the
namespace addresses, the listener and the HTTP status on the node's own address, fast
election and fetch timeouts), format the data dirs, start/kill/pause/restart the processes,
break a running node's disk (libfiu: fsync and fdatasync fail with EIO, after which the node
must fail-stop), fill a node's disk (each node's data dir is on its own small ext4 loop file
system, tests/nemesis/disks.py: a real ENOSPC), jump a node's clock, wipe a voter's disk or
remove a voter (dynamic quorums), read `/status` from inside the hub namespace.
Invariants: a node is always started the same way (namespace, libfiu preload, the shim,
optionally a deliberately broken mode), so a restart is the same program on the same data;
`stop_all()` leaves no process behind (SIGCONT, SIGTERM, then SIGKILL); `release_disks()`
leaves no mount behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from metaquorum.protocol.types import Uuid
from metaquorum.storage.formatter import DynamicVoter, ServerConfig, format_storage
from metaquorum.storage.meta_properties import read_meta_properties

from tests.nemesis.disks import Disk
from tests.nemesis.netns import Net, in_netns, node_ip
from tests.nemesis.tools import REPO
from tests.pure_build import pure_env

PORT, HTTP_PORT = 9093, 8080
FAST = {
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.fetch.timeout.ms": "1000",
}
FSYNC_POINTS = ("posix/io/sync/fsync", "posix/io/sync/fdatasync")
EIO = 5


class NotConverged(TimeoutError):
    def __init__(self, message: str, hws: dict[int, int]) -> None:
        super().__init__(message)
        self.hws = hws


class Cluster:
    def __init__(
        self,
        base: Path,
        net: Net,
        fiu_bin: Path,
        *,
        broken: str | None = None,
        dynamic: bool = False,
    ) -> None:
        self.dynamic = dynamic
        self.cluster_id = ""
        self.clock_ms: dict[int, int] = {}
        self.base, self.net, self.fiu_bin = base, net, fiu_bin
        self.ids = sorted(net.ns)
        # a broken node replaces a core function: the pure-Python package (tests/pure_build.py)
        self.env = (
            dict(pure_env(os.environ), MQ_NEMESIS_BROKEN=broken) if broken else dict(os.environ)
        )
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.starts = dict.fromkeys(self.ids, 0)
        self.disks = {i: Disk(self.dir(i)) for i in self.ids}

    def dir(self, i: int) -> Path:
        return self.base / f"node-{i}"

    def data_dir(self, i: int) -> Path:
        return self.disks[i].data

    def endpoints(self) -> list[str]:
        return [f"{node_ip(i)}:{PORT}" for i in self.ids]

    def setup(self, cluster_id: str) -> None:
        """Static `controller.quorum.voters`, or with `dynamic` (KIP-853) the bootstrap
        servers, a checkpoint from `--initial-controllers` and auto-join (so a wiped voter
        replaces its old (id, directory id) by itself)."""
        self.cluster_id = cluster_id
        voters = ",".join(f"{i}@{node_ip(i)}:{PORT}" for i in self.ids)
        initial = [DynamicVoter(i, node_ip(i), PORT, Uuid.random()) for i in self.ids]
        membership = (
            {
                "controller.quorum.bootstrap.servers": ",".join(self.endpoints()),
                "controller.quorum.auto.join.enable": "true",
            }
            if self.dynamic
            else {"controller.quorum.voters": voters}
        )
        for i in self.ids:
            self.dir(i).mkdir(parents=True, exist_ok=True)
            self.disks[i].create()
            props = {
                "node.id": str(i),
                "process.roles": "controller",
                "controller.listener.names": "CONTROLLER",
                "listeners": f"CONTROLLER://{node_ip(i)}:{PORT}",
                **membership,
                "metadata.log.dir": str(self.data_dir(i)),
                "metaquorum.http.listener": f"{node_ip(i)}:{HTTP_PORT}",
                **FAST,
            }
            path = self.dir(i) / "server.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
            format_storage(
                ServerConfig.load(path),
                cluster_id,
                initial_controllers=initial if self.dynamic else None,
            )

    def remove_voter(self, i: int) -> str:
        """`metaquorum quorum remove-controller` for node i's (id, directory id), run from the
        hub namespace as an operator would; its last output line (or why it failed)."""
        meta = read_meta_properties(self.data_dir(i))
        if meta is None or meta.directory_id is None:
            return "no directory id"
        try:
            done = subprocess.run(
                [
                    *self.net.exec_prefix(None),
                    *(sys.executable, "-m", "metaquorum.cli.quorum_cmd"),
                    *("--bootstrap-controller", ",".join(self.endpoints())),
                    *("remove-controller", "--controller-id", str(i)),
                    *("--controller-directory-id", str(meta.directory_id)),
                ],
                capture_output=True,
                text=True,
                timeout=20,
                cwd=REPO,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return "remove-controller: no answer within 20 s"
        lines = (done.stdout + done.stderr).strip().splitlines()
        return f"rc {done.returncode}: {lines[-1] if lines else ''}"

    def wipe(self, i: int) -> None:
        """kill -9, lose the data dir, format it again `--no-initial-controllers` (a new
        directory id), start: auto-join removes the old (id, dir) and adds the new one."""
        self.kill(i)
        shutil.rmtree(self.data_dir(i), ignore_errors=True)
        config = ServerConfig.load(self.dir(i) / "server.properties")
        format_storage(config, self.cluster_id, no_initial_controllers=True)
        self.start(i)

    # --- processes ---------------------------------------------------------------------------
    def start(self, i: int) -> None:
        self.starts[i] += 1
        env = dict(self.env, MQ_NEMESIS_CLOCK_FILE=str(self.clock_file(i)))
        log = (self.dir(i) / "node.log").open("ab")
        log.write(f"--- nemesis: start #{self.starts[i]} at {time.time():.3f}\n".encode())
        log.flush()
        self.procs[i] = subprocess.Popen(
            [
                *self.net.exec_prefix(i),
                *(str(self.fiu_bin / "fiu-run"), "-x", "-f", str(self.base / "fiu-ctrl")),
                *(sys.executable, "-m", "tests.nemesis.node_shim", "start"),
                *("--config", str(self.dir(i) / "server.properties")),
            ],
            stdout=log,
            stderr=log,
            env=env,
            cwd=REPO,
            start_new_session=True,
        )
        log.close()

    def clock_file(self, i: int) -> Path:
        return self.dir(i) / "clock-offset-ms"

    def jump_clock(self, i: int, delta_ms: int) -> int:
        """Step node i's clock by `delta_ms` (tests/nemesis/node_shim.py reads the offset from
        real time; it survives restarts); the new offset."""
        self.clock_ms[i] = self.clock_ms.get(i, 0) + delta_ms
        tmp = self.clock_file(i).with_suffix(".tmp")
        tmp.write_text(f"{self.clock_ms[i]}\n")
        tmp.rename(self.clock_file(i))
        return self.clock_ms[i]

    def alive(self, i: int) -> bool:
        p = self.procs.get(i)
        return p is not None and p.poll() is None

    def signal(self, i: int, sig: int) -> None:
        p = self.procs.get(i)
        if p is not None and p.poll() is None:
            os.kill(p.pid, sig)

    def kill(self, i: int) -> None:
        self.signal(i, signal.SIGKILL)
        p = self.procs.get(i)
        if p is not None:
            p.wait(10)

    def break_disk(self, i: int) -> None:
        p = self.procs.get(i)
        if p is None or p.poll() is not None:
            return
        for point in FSYNC_POINTS:
            subprocess.run(
                [
                    *(str(self.fiu_bin / "fiu-ctrl"), "-f", str(self.base / "fiu-ctrl")),
                    *("-c", f"enable name={point},failinfo={EIO}", str(p.pid)),
                ],
                check=False,
                capture_output=True,
                timeout=10,
            )

    def fill_disk(self, i: int) -> int:
        """Node i's disk full (the bytes it took); the node meets ENOSPC at its next write."""
        return self.disks[i].fill()

    def unfill_disk(self, i: int) -> None:
        self.disks[i].unfill()

    def release_disks(self, keep_data: bool) -> None:
        """Unmount every node's disk; with `keep_data`, first copy each data dir to
        `node-N/data` (a failing run is inspected after its disks are gone)."""
        for i, disk in self.disks.items():
            disk.release(self.dir(i) / "data" if keep_data else None)

    def exit_code(self, i: int, timeout_s: float) -> int | None:
        p = self.procs.get(i)
        if p is None:
            return None
        try:
            return p.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop_all(self) -> None:
        for i in self.ids:
            self.signal(i, signal.SIGCONT)
            self.signal(i, signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)

    # --- status ------------------------------------------------------------------------------
    def status(self, i: int) -> dict[str, Any] | None:
        if not self.alive(i):
            return None

        def get() -> dict[str, Any] | None:
            url = f"http://{node_ip(i)}:{HTTP_PORT}/status"
            try:
                with urllib.request.urlopen(url, timeout=1.0) as r:
                    doc: dict[str, Any] = json.loads(r.read())
                    return doc
            except (OSError, ValueError):
                return None

        return in_netns(self.net.hub, get)

    def statuses(self) -> dict[int, dict[str, Any] | None]:
        return {i: self.status(i) for i in self.ids}

    def leader(self) -> int | None:
        for i, st in self.statuses().items():
            if st is not None and st.get("state") == "leader" and st.get("leader_id") == i:
                return i
        return None

    def wait_for_leader(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.leader()
            if found is not None:
                return found
            time.sleep(0.1)
        raise TimeoutError(f"no leader within {timeout_s}s: {self.statuses()}")

    def wait_converged(self, timeout_s: float) -> dict[int, int]:
        """Until a leader exists and every node's HW equals the leader's; the HWs (else
        `NotConverged` with the last HWs seen)."""
        deadline = time.monotonic() + timeout_s
        hws: dict[int, int] = {}
        while time.monotonic() < deadline:
            sts = self.statuses()
            hws = {i: int((s or {}).get("high_watermark") or -1) for i, s in sts.items()}
            lead = [i for i, s in sts.items() if s and s.get("state") == "leader"]
            if lead and all(h == hws[lead[0]] and h > 0 for h in hws.values()):
                return hws
            time.sleep(0.2)
        raise NotConverged(f"the nodes did not converge within {timeout_s}s: HWs {hws}", hws)

"""Dynamic quorums on real processes while a client appends throughout (issue 15, KIP-853): one
node formatted `--standalone` grows 1 -> 3 -> 5 and shrinks 5 -> 3 with our
`metaquorum quorum add-controller / remove-controller`, the joining nodes formatted
`--no-initial-controllers` and finding the leader only through
`controller.quorum.bootstrap.servers`;
a wiped voter is replaced (remove (id, old dir), add (id, new dir)), by hand and by auto-join;
the leader itself is removed; the leader is killed in the middle of an add. Every run ends
with the ledger check (tests/integration/ledger.py): no acknowledged append lost, none
duplicated, each writer's order kept. Timings print with `-s` (the issue's note)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from metaquorum.admin.client import AdminClient, QuorumInfo
from metaquorum.net.endpoint import Endpoint
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.storage.formatter import ServerConfig, format_storage
from metaquorum.storage.meta_properties import read_meta_properties

from tests.integration.ledger import Ledger
from tests.integration.quorum_fixture import FAST, our_cli, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@contextmanager
def _quorum(
    tmp_path: Path,
    nodes: int,
    *,
    standalone: bool = False,
    dynamic: bool = False,
    extra: dict[str, str] | None = None,
) -> Iterator[LocalQuorum]:
    q = LocalQuorum(
        tmp_path, nodes, extra={**FAST, **(extra or {})}, standalone=standalone, dynamic=dynamic
    )
    q.write_configs()
    q.format()
    try:
        yield q
    finally:
        q.stop_all()


def _endpoints(q: LocalQuorum) -> list[Endpoint]:
    return [Endpoint("127.0.0.1", n.port) for n in q.nodes.values()]


def _describe(q: LocalQuorum) -> QuorumInfo:
    async def run() -> QuorumInfo:
        client = AdminClient(_endpoints(q), timeout_s=20)
        try:
            return await client.describe_quorum()
        finally:
            await client.close()

    return asyncio.run(run())


def _dir_id(q: LocalQuorum, nid: int) -> str:
    meta = read_meta_properties(q.nodes[nid].directory)
    assert meta is not None and meta.directory_id is not None
    return str(meta.directory_id)


def _voters(q: LocalQuorum) -> dict[int, str]:
    return {r.replica_id: str(r.directory_id) for r in _describe(q).voters}


def _caught_up_observer(q: LocalQuorum, nid: int, timeout_s: float = 30) -> None:
    def caught_up() -> bool:
        info = _describe(q)
        return any(
            r.replica_id == nid and r.log_end_offset >= info.high_watermark for r in info.observers
        )

    wait_for(caught_up, timeout_s, f"node {nid} caught up as an observer")


def _cli(q: LocalQuorum, *args: str) -> subprocess.CompletedProcess[str]:
    bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes.values())
    return our_cli("quorum", "--bootstrap-controller", bootstrap, *args)


def _add(q: LocalQuorum, nid: int) -> float:
    """add-controller for node `nid` (caught up first); seconds from request to committed."""
    _caught_up_observer(q, nid)
    started = time.monotonic()
    r = _cli(q, "add-controller", "--config", str(q.nodes[nid].config_path))
    took = time.monotonic() - started  # answered once the VotersRecord is committed
    assert r.returncode == 0, r.stderr
    assert f"Added controller {nid} with directory id {_dir_id(q, nid)}" in r.stdout
    return took


def _remove(q: LocalQuorum, nid: int, directory: str) -> None:
    r = _cli(
        q, "remove-controller", "--controller-id", str(nid), "--controller-directory-id", directory
    )
    assert r.returncode == 0, r.stderr


def _report(what: str, **figures: object) -> None:
    print(f"\n[issue-15 timing] {what}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))


def test_standalone_grows_1_3_5_and_shrinks_to_3_under_appends(tmp_path: Path) -> None:
    with _quorum(tmp_path, 5, standalone=True) as q:
        q.start(1)
        q.wait_for_leader(30)
        ledger = Ledger(lambda: _endpoints(q)).start()
        try:
            ledger.wait_acked(20)
            for nid in (2, 3, 4, 5):
                q.start(nid)
            adds = []
            for group in ((2, 3), (4, 5)):
                for nid in group:
                    adds.append(_add(q, nid))
                    ledger.wait_acked(10)
                assert sorted(_voters(q)) == sorted([1, *range(2, group[-1] + 1)])
            voters = _voters(q)
            assert voters == {n: _dir_id(q, n) for n in range(1, 6)}
            for nid in (5, 4):
                _remove(q, nid, voters[nid])
                ledger.wait_acked(10)
            info = _describe(q)
            assert sorted(r.replica_id for r in info.voters) == [1, 2, 3]
            # Removed controllers still fetch, as observers (Kafka's describe lists them so).
            wait_for(
                lambda: {4, 5} <= {r.replica_id for r in _describe(q).observers},
                20,
                "4 and 5 listed as observers",
            )
        finally:
            ledger.stop()
        result = ledger.check()
        assert result.acked > 100
        _report(
            "1->3->5->3",
            add_s=[round(a, 3) for a in adds],
            acked=result.acked,
            unknown=result.unknown,
            max_gap_s=round(result.max_gap_s, 3),
        )


def _wipe_and_reformat(q: LocalQuorum, nid: int) -> str:
    """kill -9, lose the disk, format it again `--no-initial-controllers` (a new dir id)."""
    q.kill(nid)
    shutil.rmtree(q.nodes[nid].directory)
    format_storage(
        ServerConfig.load(q.nodes[nid].config_path), q.cluster_id, no_initial_controllers=True
    )
    return _dir_id(q, nid)


@pytest.mark.parametrize("auto_join", [False, True], ids=["by-hand", "auto-join"])
def test_a_wiped_voter_is_replaced_under_appends(tmp_path: Path, auto_join: bool) -> None:
    extra = {"controller.quorum.auto.join.enable": "true"} if auto_join else {}
    with _quorum(tmp_path, 3, dynamic=True, extra=extra) as q:
        q.start_all()
        leader, _ = q.wait_for_leader(30)
        victim = next(n for n in (3, 2) if n != leader)
        ledger = Ledger(lambda: _endpoints(q)).start()
        try:
            ledger.wait_acked(20)
            old = _voters(q)[victim]
            started = time.monotonic()
            new = _wipe_and_reformat(q, victim)
            assert new != old
            q.start(victim)
            if not auto_join:
                _caught_up_observer(q, victim)
                _remove(q, victim, old)
                _add(q, victim)
            wait_for(lambda: _voters(q).get(victim) == new, 60, f"{victim} voter with its new dir")
            took = time.monotonic() - started
            ledger.wait_acked(10)
        finally:
            ledger.stop()
        result = ledger.check()
        _report(
            f"replace wiped voter ({'auto-join' if auto_join else 'by hand'})",
            end_to_end_s=round(took, 2),
            acked=result.acked,
            max_gap_s=round(result.max_gap_s, 3),
        )


def test_remove_the_leader_then_kill_the_leader_during_an_add(tmp_path: Path) -> None:
    with _quorum(tmp_path, 4, dynamic=True) as q:  # 4 voters: 3 after the removal
        q.start_all()
        leader, epoch = q.wait_for_leader(30)
        ledger = Ledger(lambda: _endpoints(q)).start()
        try:
            ledger.wait_acked(20)
            voters = _voters(q)
            _remove(q, leader, voters[leader])
            # The removed leader resigns once the new set is committed; another leads.
            new_leader, epoch = q.wait_for_leader(30, exclude={leader}, min_epoch=epoch + 1)
            ledger.wait_acked(10)
            assert leader not in _voters(q)
            # Add the old leader back while killing the current leader mid-way.
            _caught_up_observer(q, leader)
            bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes.values())
            add = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "metaquorum.cli.quorum_cmd",
                    "--bootstrap-controller",
                    bootstrap,
                    "add-controller",
                    "--config",
                    str(q.nodes[leader].config_path),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            time.sleep(0.3)
            q.kill(new_leader)
            first_add = add.communicate(timeout=90)
            q.wait_for_leader(30, exclude={new_leader}, min_epoch=epoch + 1)
            if add.returncode != 0:  # the change was lost with the leader: ask again
                _add(q, leader)
            wait_for(lambda: leader in _voters(q), 30, f"{leader} a voter again")
            q.start(new_leader)
            ledger.wait_acked(10)
        finally:
            ledger.stop()
        result = ledger.check()
        _report(
            "remove leader; kill leader during add",
            first_add=(add.returncode, (first_add[0] + first_add[1]).strip()[-120:]),
            acked=result.acked,
            max_gap_s=round(result.max_gap_s, 3),
        )


def test_make_run_forms_a_dynamic_quorum_by_auto_join(tmp_path: Path) -> None:
    """`make run`'s launcher: node 1 --standalone, nodes 2 and 3 join by themselves; the
    status line lists voters and observers; Ctrl-C stops every node, also when the launcher
    was started with SIGINT ignored, as a background job of a non-interactive shell (a CI
    script) starts it: Python installs no Ctrl-C handler then (it hung CI twice)."""
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child inherits SIG_IGN
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "metaquorum.runtime.local_quorum", "--dir", str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        signal.signal(signal.SIGINT, inherited)
    out = b""
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)

    def logs() -> str:
        tails = [
            f"node {n}: " + " | ".join(p.read_text(errors="replace").splitlines()[-4:])
            for n in (1, 2, 3)
            if (p := tmp_path / f"node-{n}" / "node.log").exists()
        ]
        return out.decode(errors="replace")[-1500:] + "\n" + "\n".join(tails)

    try:
        deadline = time.monotonic() + 90
        while not re.search(rb"voters\[1:\d+ 2:\d+ 3:\d+\]", out):
            assert time.monotonic() < deadline, "no 3 voters within 90 s:\n" + logs()
            out += proc.stdout.read() or b""
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            # the nodes run in sessions of their own: stop them too
            subprocess.run(["pkill", "-9", "-f", f"config {tmp_path}/node-"], check=False)
            raise AssertionError(
                "the launcher did not stop within 60 s of Ctrl-C:\n" + logs()
            ) from None
    os.set_blocking(proc.stdout.fileno(), True)
    out += proc.stdout.read() or b""
    assert b"node 1 formatted --standalone" in out and b"observers[" in out
    assert out.rstrip().endswith(b"stopped."), logs()


def test_a_joined_node_restarts_into_the_voter_set_its_log_holds(tmp_path: Path) -> None:
    """A node formatted --no-initial-controllers has no start-up voters: after it joined and
    is restarted, its peers come from the VotersRecords its log replays (the nemesis found it
    stuck: "no endpoint for replica N" forever)."""
    extra = {"controller.quorum.auto.join.enable": "true"}
    with _quorum(tmp_path, 3, standalone=True, extra=extra) as q:
        q.start_all()
        q.wait_for_leader(30)
        wait_for(lambda: sorted(_voters(q)) == [1, 2, 3], 60, "2 and 3 to join")
        ledger = Ledger(lambda: _endpoints(q)).start()
        try:
            ledger.wait_acked(20)
            leader, _ = q.wait_for_leader(30)
            victim = next(n for n in (3, 2) if n != leader)
            q.kill(victim)
            ledger.wait_acked(20)
            q.start(victim)
            ledger.wait_acked(20)
            _, _, hw = _leader_hw(q)
            wait_for(
                lambda: (q.nodes[victim].status() or {}).get("high_watermark", -1) >= hw,
                30,
                f"restarted node {victim} to fetch again",
            )
        finally:
            ledger.stop()
        ledger.check()


def _leader_hw(q: LocalQuorum) -> tuple[int, int, int]:
    leader, epoch = q.wait_for_leader(30)
    return leader, epoch, int((q.nodes[leader].status() or {})["high_watermark"])

"""The nemesis tier's short run (marker `nemesis`; `make nemesis-short`, part of `make test`).

- Several seeds, each a 3-voter quorum in network namespaces under every fault kind the
  harness has (kill -9, pause, isolate, bridge, one-way, loss, slow link, fsync EIO), checked
  by porcupine and the ledger; any violation fails the test and names the run directory and
  the command that re-runs the seed.
- A leader whose own disk fills up (a real ENOSPC) fail-stops with one line and loses nothing.
- The leader's packets to the followers late, then reordered (NFQUEUE and `mqnemesis delay`:
  this kernel has no netem): nothing is lost, and the program really held packets.
- Regression tests of two findings, fixed in main: a leader whose wall clock steps back 10 s
  while it is cut off serves no stale read (scenario `clock-back-isolate-leader`); a wiped
  voter that rejoined by auto-join catches up after a restart (`wipe-then-restart`).
- The checker can fail: the same harness against a deliberately broken node (injected from
  the test: tests/nemesis/node_shim.py) reports the violation, and porcupine's
  visualisation is kept in the run directory.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.nemesis.nemesis import DYNAMIC_KINDS, KINDS
from tests.nemesis.run import run
from tests.nemesis.tools import GO_SRC, mqnemesis_binary

pytestmark = [pytest.mark.nemesis, pytest.mark.timeout(300)]

# Flags after a seed: "c" composed faults (a process lane beside a network lane), "d" a
# dynamic (KIP-853) quorum formatted --initial-controllers with auto-join.
SEEDS = os.environ.get("NEMESIS_SEEDS", "101,202,303cd").split(",")
DURATION_S = float(os.environ.get("NEMESIS_DURATION_S", "40"))
BASE = Path(os.environ.get("METAQUORUM_NEMESIS_DIR", os.environ.get("TMPDIR", "/tmp")))


def test_the_checker_and_the_wire_codec_pass_their_own_tests() -> None:
    """`go test` of tests/nemesis/go: the model accepts a linearizable history and rejects a
    stale read, an offset acknowledged twice, a never-sent append in the log, a value nobody
    wrote; a RecordBatch round-trips and a flipped bit fails its CRC."""
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0")
    done = subprocess.run(
        ["go", "test", "-count=1", "."],
        cwd=GO_SRC,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_clients_stop_cleanly_on_sigterm(tmp_path: Path) -> None:
    """`mqnemesis run` stopped by SIGTERM before its duration (the Kubernetes nemesis stops it
    when its schedules end) exits 0 with every operation it made in the history and its counts
    on stdout: nothing in flight is lost from the history."""
    history = tmp_path / "history.jsonl"
    client = subprocess.Popen(
        [
            *(str(mqnemesis_binary()), "run", "-endpoints", "127.0.0.1:1,127.0.0.1:2"),
            *("-clients", "2", "-duration", "300s", "-out", str(history)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)
    client.terminate()
    out, _ = client.communicate(timeout=30)
    assert client.returncode == 0, client.returncode
    counts = json.loads(out)
    lines = history.read_text().splitlines()
    assert sum(counts.values()) == len(lines) > 0, (counts, len(lines))
    assert all(json.loads(x)["type"] == "fail" for x in lines)


def _kinds(seed: str) -> tuple[str, ...]:
    return KINDS + DYNAMIC_KINDS if "d" in seed else KINDS


def _why(s: dict[str, object]) -> str:
    keys = ("porcupine", "ledger", "findings", "recovery", "faults_injected", "dir", "rerun")
    return "; ".join(f"{k}: {s.get(k)}" for k in keys)


def _scenario(
    name: str, duration_s: float, base: str, converge_s: float, **kw: Any
) -> dict[str, Any]:
    """One run of a fixed scenario (nemesis.SCENARIOS), seed 1, in its own base dir."""
    return run(1, duration_s, KINDS, scenario=name, base=BASE / base, converge_s=converge_s, **kw)


@pytest.mark.parametrize("seed", SEEDS)
def test_no_violation_under_faults(seed: str) -> None:
    n, flags = int(seed.rstrip("cd")), seed.lstrip("0123456789")
    s = run(
        n,
        DURATION_S,
        KINDS,
        base=BASE / "metaquorum-nemesis",
        compose="c" in flags,
        dynamic="d" in flags,
    )
    assert s["ok"], _why(s)
    assert s["porcupine"]["result"] == "Ok" and s["porcupine"]["appends_ok"] > 100, _why(s)
    assert sum(s["faults_injected"].values()) >= 5, _why(s)


def test_every_fault_kind_is_injected_across_the_seeds() -> None:
    from tests.nemesis.nemesis import schedule

    kinds = {
        f.kind
        for seed in SEEDS
        for f in schedule(int(seed.rstrip("cd")), DURATION_S, _kinds(seed), compose="c" in seed)
    }
    assert kinds == set(KINDS + DYNAMIC_KINDS)


@pytest.mark.parametrize(
    ("broken", "scenario"),
    [("ack-before-majority", "isolate-leader"), ("stale-read", "isolate-leader")],
)
def test_the_checker_catches_a_broken_node(broken: str, scenario: str) -> None:
    s = _scenario(scenario, 14, "metaquorum-nemesis-broken", 20, broken=broken)
    assert not s["ok"], f"the broken node ({broken}) was not caught: {_why(s)}"
    assert s["porcupine"]["result"] == "Illegal", _why(s)
    html = Path(str(s["porcupine"].get("visualization", "")))
    assert html.is_file() and html.stat().st_size > 10_000, _why(s)
    if broken == "ack-before-majority":
        assert any("acknowledged append" in v for v in s["ledger"]), _why(s)


def test_a_leader_whose_clock_steps_back_serves_no_stale_read() -> None:
    """Found by this tier (docs/nemesis.md, Findings), fixed in main eba7d1c."""
    s = _scenario("clock-back-isolate-leader", 16, "metaquorum-nemesis-clock", 30)
    assert s["ok"], _why(s)


def test_a_wiped_voter_that_rejoined_survives_a_restart() -> None:
    """Found by this tier (docs/nemesis.md, Findings), fixed in main 1ddc54f."""
    s = _scenario("wipe-then-restart", 20, "metaquorum-nemesis-wipe", 20, dynamic=True)
    assert s["ok"], _why(s)


def test_a_leader_whose_disk_fills_up_fail_stops_and_nothing_is_lost() -> None:
    """A real ENOSPC (the leader's own ext4 loop disk filled up, tests/nemesis/disks.py): the
    leader stops with one line naming the error, a new leader takes over, the old one restarts
    on its data once the space is back; porcupine and the ledger pass."""
    s = _scenario("full-leader", 16, "metaquorum-nemesis-full", 30)
    assert s["ok"], _why(s)
    assert s["faults_injected"] == {"full": 1}, _why(s)
    (fault,) = [json.loads(x) for x in Path(s["dir"], "nemesis.jsonl").read_text().splitlines()]
    log = Path(s["dir"], f"node-{fault['node']}", "node.log").read_text(errors="replace")
    stops = [x for x in log.splitlines() if "No space left on device" in x]
    assert stops, f"no ENOSPC line in node {fault['node']}'s log: {log[-2000:]}"
    assert s["node_starts"][fault["node"]] == 2, _why(s)


def test_late_and_reordered_packets_between_the_nodes_lose_nothing() -> None:
    """The leader's packets to the followers held 50-150 ms each for 4 s (delay), then 30% of
    them 20-100 ms (reorder: held ones arrive after later ones); porcupine and the ledger pass,
    and each fault's log line carries its program's count of held packets and longest hold."""
    from tests.nemesis.nemesis import HOLDS

    s = _scenario("delay-reorder-leader", 16, "metaquorum-nemesis-delay", 20)
    assert s["ok"], _why(s)
    assert s["faults_injected"] == {"delay": 1, "reorder": 1}, _why(s)
    for line in Path(s["dir"], "nemesis.jsonl").read_text().splitlines():
        fault = json.loads(line)
        m = re.search(r"(\d+) packets held \(longest (\d+) ms\), (\d+) passed", fault["what"])
        assert m, fault
        held, longest, passed = map(int, m.groups())
        lo, hi, share = HOLDS[fault["kind"]]
        assert held >= 20 and lo <= longest <= hi, fault
        assert (passed == 0) == (share == 100), fault

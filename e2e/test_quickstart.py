"""README's quickstart, run as written: `make cluster` ... `make cluster-down`, then the host clean.

The lines between README's `<!-- quickstart:begin -->` and `<!-- quickstart:end -->` markers are
run verbatim, one after another, from the repository root: those before `make cluster-shell` and
after its `exit` in a shell on the host, those between fed to `make cluster-shell` as a user
would type them (with `set -ex` first, so a failing line fails the test). The cluster gets a
state dir and network namespace of its own (MQ_CLUSTER_STATE / MQ_CLUSTER_NETNS), so a user's
`make cluster` is never touched. Checked: a second `make cluster` says it is up; the quorum
reaches 3 voters, then 5, seen by kubectl's printer columns, `metaquorum quorum describe`
through the Service, `kubectl exec` in a pod and Kafka's own kafka-metadata-quorum.sh; after
`make cluster-down` nothing the cluster made is left on the host (hoststate.py: processes,
mounts, network namespaces, the host's iptables chains, cgroups, shim sockets). Each line's
seconds go to the e2e timings. Needs real containers (skips where `container-host.sh check`
says they cannot run, with its reason); about 4 minutes.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import hoststate
import pytest
from harness import ROOT, TIMINGS

pytestmark = pytest.mark.e2e

BEGIN, END = "<!-- quickstart:begin -->", "<!-- quickstart:end -->"


def quickstart_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    body = block.split("```", 2)[1].split("\n", 1)[1]  # inside the fence, after ```sh
    return [ln for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def split_at_shell(lines: list[str]) -> tuple[list[str], list[str], list[str]]:
    i = lines.index("make cluster-shell")
    j = lines.index("exit", i)
    return lines[:i], lines[i + 1 : j], lines[j + 1 :]


def test_quickstart_block_has_the_steps() -> None:
    host, inside, after = split_at_shell(quickstart_lines())
    assert host[0] == "make cluster" and after == ["make cluster-down"]
    assert any(ln.startswith("helm install metaquorum ") for ln in inside)
    assert "kubectl apply -f e2e/samples/metadataquorum.yaml" in inside
    assert "kubectl scale metadataquorum quorum --replicas=5" in inside
    assert any(ln.startswith("kafka-metadata-quorum.sh ") for ln in inside)


def sh(line: str, env: dict[str, str], stdin: str | None = None) -> str:
    t0 = time.monotonic()
    proc = subprocess.run(
        ["bash", "-c", line],
        cwd=ROOT,
        env=env,
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
        check=False,
    )
    TIMINGS[f"quickstart {len(TIMINGS) + 1}: {line[:60]} (s)"] = time.monotonic() - t0
    assert proc.returncode == 0, f"{line!r} exited {proc.returncode}:\n{proc.stdout[-4000:]}"
    return proc.stdout


@pytest.mark.timeout(1800)
def test_readme_quickstart_verbatim_then_host_clean(tmp_path: Path) -> None:
    why = subprocess.run(
        [str(ROOT / "e2e" / "tools" / "container-host.sh"), "check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if why.returncode != 0:
        pytest.skip(f"make cluster needs real containers: {why.stdout.strip()}")
    state, netns = tmp_path / "cluster", f"mq-qs-{os.getpid()}"
    env = {**os.environ, "MQ_CLUSTER_STATE": str(state), "MQ_CLUSTER_NETNS": netns}
    for var in ("E2E_NETNS", "KUBECONFIG"):  # the user's shell has none of run.sh's
        env.pop(var, None)
    host, inside, after = split_at_shell(quickstart_lines())
    before = hoststate.snapshot(state)
    try:
        t0 = time.monotonic()
        for line in host:
            out = sh(line, env)
        assert "up in" in out
        assert "already up" in sh("make cluster", env)  # idempotent
        shell = sh("make cluster-shell", env, stdin="set -ex\n" + "\n".join(inside) + "\n")
        TIMINGS["quickstart: make cluster to 5 voters and both tools (s)"] = time.monotonic() - t0
    finally:
        for line in after:
            sh(line, env)
    assert shell.count("condition met") == 2, shell
    assert re.search(r"^quorum\s+3\s+3/3\s+0,1,2\s", shell, re.M), shell
    voters = [ln for ln in shell.splitlines() if ln.startswith("CurrentVoters:")]
    assert len(voters) == 2, shell  # metaquorum's describe and Kafka's
    for ln in voters:
        assert sorted(map(int, re.findall(r'"id": (\d+)', ln))) == [0, 1, 2, 3, 4], ln
    rows = re.findall(r"^[0-4]\s+\S+\s+\d+\s+\d+\s+\d+\s+\d+\s+(Leader|Follower)\s*$", shell, re.M)
    assert sorted(rows) == ["Follower"] * 4 + ["Leader"], shell  # kubectl exec ... --replication
    left = hoststate.left_behind(before, hoststate.snapshot(state))
    assert not left, f"make cluster-down left on the host: {left}"
    assert not state.exists() and not (Path("/run/netns") / netns).exists()

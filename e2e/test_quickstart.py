"""README's quickstart, run as written: `make cluster` ... `make cluster-down`, then the host clean.

The lines between README's `<!-- quickstart:begin -->` and `<!-- quickstart:end -->` markers are
run verbatim, one after another, from the repository root: those before `make cluster-shell` and
after its `exit` in a shell on the host, those between by `make cluster-shell` as a user would
type them: from a file, stdin /dev/null (so `kubectl run -i` cannot read the lines after it, as
it would from a pipe), `set -ex` first (a failing line fails the test), and after each line an
`echo` of a marker with the wall clock, which cuts the shell's output into each line's output
and times it; the lines themselves are unchanged. The cluster gets a state dir and network
namespace of its own (MQ_CLUSTER_STATE / MQ_CLUSTER_NETNS), so a user's
`make cluster` is never touched. Checked: a second `make cluster` says it is up; the quorum
reaches 3 voters, then 5, seen by kubectl's printer columns, `metaquorum quorum describe`
through the Service, `kubectl exec` in a pod, a throwaway pod of the node image (`kubectl run
--rm -i`, the image imported, never pulled) and Kafka's own kafka-metadata-quorum.sh; after
`make cluster-down` nothing the cluster made is left on the host (hoststate.py: processes,
mounts, network namespaces, the host's iptables chains, cgroups, shim sockets). Each line's
seconds go to the e2e timings, with README's figure "make cluster to 3 voters" (from the start
of `make cluster` to the end of the `kubectl wait` for 3/3 voters). Needs real containers
(skips where `container-host.sh check` says they cannot run, with its reason); about 4 minutes.
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
MARK = "@@quickstart-line"


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
    run = [ln for ln in inside if ln.startswith("kubectl run ")]
    assert len(run) == 1 and " --rm -i " in run[0] and "--image=metaquorum/node:" in run[0]
    assert "--image-pull-policy=Never" in run[0] and run[0].endswith(" describe --status'")
    # kubectl attaches after the pod runs and shows only what is printed after that: output
    # printed before is lost (kubernetes/kubernetes#28695), so the pod waits before printing
    assert " -- sh -c 'sleep " in run[0]


def with_markers(lines: list[str]) -> str:
    """The shell's input: `set -ex`, then each line followed by an echo of its index and the
    wall clock (bash's EPOCHREALTIME)."""
    out = ["set -ex"]
    for i, ln in enumerate(lines):
        out += [ln, f'echo "{MARK} {i} $EPOCHREALTIME"']
    return "\n".join(out) + "\n"


def per_line(output: str) -> list[tuple[str, float]]:
    """Each line's output and the wall-clock time it ended, cut at the markers (a marker's own
    trace line starts with `+ `, so only the echo's output matches)."""
    found, start = [], 0
    for m in re.finditer(rf"^{MARK} (\d+) (\S+)$", output, re.M):
        assert int(m.group(1)) == len(found), output
        found.append((output[start : m.start()], float(m.group(2).replace(",", "."))))
        start = m.end()
    return found


def test_per_line_cuts_at_the_markers_only() -> None:
    out = f"+ a\nA\n+ echo '{MARK} 0 5.5'\n{MARK} 0 5.5\n+ b\nB\n{MARK} 1 7,25\n"
    assert per_line(out) == [(f"+ a\nA\n+ echo '{MARK} 0 5.5'\n", 5.5), ("\n+ b\nB\n", 7.25)]
    script = with_markers(["make x", "exit 3"]).splitlines()
    assert script == ["set -ex", "make x", f'echo "{MARK} 0 $EPOCHREALTIME"', "exit 3",
                      f'echo "{MARK} 1 $EPOCHREALTIME"']  # fmt: skip


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
        t0, wall0 = time.monotonic(), time.time()
        for line in host:
            out = sh(line, env)
        assert "up in" in out
        up = time.time()
        assert "already up" in sh("make cluster", env)  # idempotent
        script = tmp_path / "shell-lines.sh"  # read from a file, as typed lines are not stdin:
        script.write_text(with_markers(inside))  # `kubectl run -i` would eat the lines after it
        shell = sh("make cluster-shell", env, stdin=f"exec bash {script} < /dev/null\n")
        TIMINGS["quickstart: make cluster to 5 voters and all views (s)"] = time.monotonic() - t0
    finally:
        for line in after:
            sh(line, env)
    outputs = per_line(shell)
    assert len(outputs) == len(inside), shell
    prev = up
    for i, (line, (_, end)) in enumerate(zip(inside, outputs, strict=True)):
        TIMINGS[f"quickstart shell line {i + 1}: {line[:60]} (s)"] = end - prev
        prev = end
    three = next(i for i, ln in enumerate(inside) if "readyVoters}'=3/3" in ln)
    TIMINGS["quickstart: make cluster to 3 voters (README) (s)"] = outputs[three][1] - wall0
    print(f"quickstart: make cluster to 3 voters in {outputs[three][1] - wall0:.1f} s")
    assert shell.count("condition met") == 2, shell
    assert re.search(r"^quorum\s+3\s+3/3\s+0,1,2\s", shell, re.M), shell
    voters = [ln for ln in shell.splitlines() if ln.startswith("CurrentVoters:")]
    assert len(voters) == 3, shell  # metaquorum's describe, in a pod of its own, and Kafka's
    for ln in voters:
        assert sorted(map(int, re.findall(r'"id": (\d+)', ln))) == [0, 1, 2, 3, 4], ln
    run = next(out for ln, (out, _) in zip(inside, outputs, strict=True)
               if ln.startswith("kubectl run "))  # fmt: skip
    in_pod = [ln for ln in run.splitlines() if ln.startswith("CurrentVoters:")]
    assert len(in_pod) == 1 and re.search(r"^LeaderId:\s+[0-4]$", run, re.M), run
    rows = re.findall(r"^[0-4]\s+\S+\s+\d+\s+\d+\s+\d+\s+\d+\s+(Leader|Follower)\s*$", shell, re.M)
    assert sorted(rows) == ["Follower"] * 4 + ["Leader"], shell  # kubectl exec ... --replication
    left = hoststate.left_behind(before, hoststate.snapshot(state))
    assert not left, f"make cluster-down left on the host: {left}"
    assert not state.exists() and not (Path("/run/netns") / netns).exists()

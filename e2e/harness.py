"""What the e2e tests share, whatever the cluster: `Cluster`, `wait_for` and the constants.

Role: the library of the e2e tier. Tests and the harness's own modules (clusters.py,
kindcluster.py, diagnostics.py) import it; conftest.py only wires it into fixtures and hooks.
`Cluster` is the one handle a test has on the cluster under it: the Kubernetes clients,
kubectl and helm with its kubeconfig, and the few operations whose means differ by node agent
(kill a container, its restarts, a PV's directory, a lost disk, a pod's log; docs/e2e.md's
table) with one meaning on every target.

Invariants: a leaf of the e2e import graph (it imports no other e2e module), so anything may
import it; it starts nothing itself. TIMINGS is the session's one table of start-up times,
printed by conftest's terminal summary.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TIMINGS: dict[str, float] = {}


def wait_for(fn: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    """Poll fn until it returns a truthy value; fail with `what` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except Exception as e:  # an API blip or not-yet-existing object
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")


OPERATOR_NS = "metaquorum-system"
CHART = str(ROOT / "charts" / "metaquorum")


@dataclass
class Cluster:
    kind: str
    kubeconfig: Path
    clients_bin: Path
    api: client.ApiClient
    standin_control: str | None = None
    placeholder: list[str] = field(default_factory=list)
    # pods' stable names and Services' names -> pod IPs, for this process and Kafka's Java tool:
    # written by the stand-in (its pods resolve through it too), or, on the real kubelet, by a
    # thread of the fixture from the same API objects CoreDNS serves (hostsfile.follow)
    hosts_file: Path | None = None
    containerd: Any = None  # the real-kubelet target's containerd (containerd.Containerd)
    pod_logs: Path | None = None  # where the node agent writes containers' logs

    def pod_log(self, namespace: str, pod: str, uid: str, container: str = "node") -> str | None:
        """One container's log of one pod incarnation (its uid), read from the node agent's
        files, also after the pod was deleted while they remain (the stand-in keeps them; a
        real kubelet removes a deleted pod's log directory). None once they are gone."""
        if self.pod_logs is None:
            return None
        pod_dir = self.pod_logs / f"{namespace}_{pod}_{uid}"
        files = [pod_dir / f"{container}.log", *sorted((pod_dir / container).glob("*.log"))]
        found = [f.read_text(errors="replace") for f in files if f.is_file()]
        return "".join(found) if found else None

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    def run(
        self, tool: str, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        proc = subprocess.run(
            [str(self.clients_bin / tool), *args],
            input=input,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"{tool} {' '.join(args)} failed:\n{proc.stderr}{proc.stdout}")
        return proc

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run("kubectl", *args, input=input, check=check)

    def helm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("helm", *args, check=check)

    def pod_uids(self, namespace: str, replicas: int, name: str = "quorum") -> dict[int, str]:
        """Ordinal -> uid of a StatefulSet's pods (a changed uid: the pod was recreated)."""
        return {
            i: self.core.read_namespaced_pod(f"{name}-{i}", namespace).metadata.uid
            for i in range(replicas)
        }

    def pod_http(self, namespace: str, pod: str, port: int, path: str) -> Any:
        """GET a pod's HTTP endpoint: directly on its loopback IP here, through the apiserver's
        pod proxy on kind (the apiserver refuses to proxy to loopback addresses)."""
        if self.kind == "kind":
            out = self.kubectl(
                "get", "--raw", f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy{path}"
            )
            return json.loads(out.stdout)
        ip = self.core.read_namespaced_pod(pod, namespace).status.pod_ip
        with urllib.request.urlopen(f"http://{ip}:{port}{path}", timeout=5) as r:
            return json.loads(r.read())

    def kill_container(self, namespace: str, pod: str, container: str) -> int:
        """SIGKILL a running container's process from outside, as a crash would; its pid."""
        if self.containerd is None:
            return int(self.standin("/kill", namespace=namespace, pod=pod)["killed"])
        status = self.core.read_namespaced_pod(pod, namespace).status.container_statuses
        (cid,) = [c.container_id for c in status if c.name == container]
        rows = self.containerd.ctr("tasks", "ls").stdout.splitlines()[1:]
        (pid,) = [int(r.split()[1]) for r in rows if r.split()[0] == cid.split("://", 1)[1]]
        os.kill(pid, signal.SIGKILL)
        return pid

    def restarts(self, namespace: str, pod: str, container: str) -> int:
        """A container's restartCount, as the node agent reports it in the pod's status."""
        status = self.core.read_namespaced_pod(pod, namespace).status.container_statuses or []
        return sum(c.restart_count for c in status if c.name == container)

    def pv_path(self, namespace: str, pvc: str) -> Path:
        """The directory on this machine behind a bound PVC (a stand-in hostPath PV or the
        real-kubelet target's `local` PV; kind's are inside its node container)."""
        if self.kind == "kind":
            pytest.skip("kind's volumes are inside its node container")
        name = self.core.read_namespaced_persistent_volume_claim(pvc, namespace).spec.volume_name
        spec = self.core.read_persistent_volume(name).spec
        return Path((spec.local or spec.host_path).path)

    def lose_disk(self, namespace: str, pvc: str) -> None:
        """The volume's contents lost under the running pod (a disk replaced by an empty one
        at the same place): the PV's directory emptied from outside, kept (it is mounted)."""
        for entry in self.pv_path(namespace, pvc).iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def standin(self, action: str, **query: str) -> Any:
        if self.standin_control is None:
            pytest.skip("needs the kubelet stand-in (E2E_CLUSTER=stand-in)")
        qs = "&".join(f"{k}={v}" for k, v in query.items())
        req = urllib.request.Request(f"{self.standin_control}{action}?{qs}", method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())


def clients_bin() -> Path:
    """helm and kubectl: where run.sh installed them, else installed now (cached)."""
    env = os.environ.get("E2E_CLIENTS_BIN")
    if env:
        return Path(env)
    out = subprocess.run(
        [str(HERE / "tools" / "install-clients.sh")], check=True, stdout=subprocess.PIPE, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def package_chart(cluster: Cluster) -> str:
    """`helm package` the chart into dist/ (what `make chart` makes and a user installs); the
    package's path. The operator fixture installs this, not the source folder (issue 32)."""
    out = cluster.helm("package", CHART, "--destination", str(ROOT / "dist")).stdout
    return out.strip().rsplit(": ", 1)[1]


def render(cluster: Cluster, *args: str) -> list[dict]:  # type: ignore[type-arg]
    """The chart's objects as `helm template` renders them (release mq, namespace ops)."""
    out = cluster.helm("template", "mq", CHART, "--namespace", "ops", *args).stdout
    return [d for d in yaml.safe_load_all(out) if d]

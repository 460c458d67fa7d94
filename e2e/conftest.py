"""Fixtures of the e2e tier: one suite, three clusters.

- `E2E_CLUSTER=local` (`make e2e`'s default wherever containers can run; `local-kubelet` is
  its old name): a real single-node Kubernetes in a network namespace of its own
  (kubeletcluster.py: kubelet, containerd + runc, CNI bridge, kube-proxy, CoreDNS), pods running
  the images built from the Dockerfiles; e2e/run.sh makes the namespace and picks the target.
- `E2E_CLUSTER=stand-in` (the fallback where containers cannot run, and pytest's default when
  started without e2e/run.sh): the real control plane on loopback (controlplane.py) with the
  kubelet stand-in (kubelet.py) as a child process; binaries from e2e/tools/ (cached).
- `E2E_CLUSTER=kind`: a kind cluster where a container runtime exists (kindcluster.py): images
  built from node/Dockerfile and operator/Dockerfile, loaded, the chart installed.

`cluster` is session-wide; `operator` installs the chart (helm install, which also installs the
CRD from the chart's crds/) and waits for the operator Deployment; `namespace` gives each test
its own namespace and deletes it after. Start times are printed in the terminal summary.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

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


def _clients_bin() -> Path:
    env = os.environ.get("E2E_CLIENTS_BIN")
    if env:
        return Path(env)
    out = subprocess.run(
        [str(HERE / "tools" / "install-clients.sh")], check=True, stdout=subprocess.PIPE, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def local_cluster() -> Iterator[Cluster]:
    from controlplane import ControlPlane

    root = Path(tempfile.mkdtemp(prefix="metaquorum-e2e-", dir=os.environ.get("E2E_STATE_ROOT")))
    cp = ControlPlane(root)
    kubelet: subprocess.Popen[bytes] | None = None
    t_start = time.monotonic()
    try:
        cp.start()
        TIMINGS["control plane start to /readyz (s)"] = cp.start_seconds
        log = open(root / "kubelet.log", "ab")  # noqa: SIM115 - owned by the child
        kubelet = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "kubelet.py"),
                "--kubeconfig",
                str(cp.kubeconfig),
                "--state",
                str(root / "kubelet"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        (root / "kubelet.pid").write_text(str(kubelet.pid))
        port_file = root / "kubelet" / "control.port"
        wait_for(port_file.exists, 30, "the kubelet stand-in's control port")
        api = config.new_client_from_config(str(cp.kubeconfig))
        c = Cluster(
            "stand-in",
            cp.kubeconfig,
            _clients_bin(),
            api,
            standin_control=f"http://127.0.0.1:{port_file.read_text()}",
            placeholder=["python3", str(HERE / "placeholder_node.py")],
            hosts_file=root / "kubelet" / "hosts",
            pod_logs=root / "kubelet" / "pods",
        )

        def node_ready() -> bool:
            node = c.core.read_node("standin")
            return any(x.type == "Ready" and x.status == "True" for x in node.status.conditions)

        wait_for(node_ready, 30, "node standin Ready")
        # the controller-manager's service-account and root-CA controllers are up when the
        # default namespace has both
        wait_for(
            lambda: c.core.read_namespaced_service_account("default", "default"),
            60,
            "the default ServiceAccount (controller-manager running)",
        )
        TIMINGS["control plane + stand-in usable (s)"] = time.monotonic() - t_start
        yield c
    finally:
        cp.stop()  # the stand-in first (it stops its pods), then the control plane
        if os.environ.get("E2E_KEEP") != "1":
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"\ne2e state kept in {root}")


@contextlib.contextmanager
def kubelet_cluster() -> Iterator[Cluster]:
    import hostsfile
    from kubeletcluster import NODE, KubeletNode

    root = Path(tempfile.mkdtemp(prefix="mq-k8s-", dir=os.environ.get("E2E_STATE_ROOT")))
    node = KubeletNode(root)
    t_start = time.monotonic()
    stop_names = threading.Event()
    names: threading.Thread | None = None
    try:
        node.start()
        TIMINGS.update(node.timings)
        api = config.new_client_from_config(str(node.cp.kubeconfig))
        c = Cluster(
            "local",
            node.cp.kubeconfig,
            _clients_bin(),
            api,
            placeholder=["python3", "/opt/metaquorum/placeholder_node.py"],
            containerd=node.containerd,
            pod_logs=root / "pod-logs",
            hosts_file=root / "hosts",
        )
        names = threading.Thread(
            target=hostsfile.follow, args=(api, root / "hosts", stop_names), daemon=True
        )
        names.start()

        def node_ready() -> bool:
            n = c.core.read_node(NODE)
            return any(x.type == "Ready" and x.status == "True" for x in n.status.conditions)

        wait_for(node_ready, 90, f"node {NODE} Ready")
        wait_for(
            lambda: c.core.read_namespaced_service_account("default", "default"),
            60,
            "the default ServiceAccount (controller-manager running)",
        )

        def coredns_ready() -> bool:
            with urllib.request.urlopen("http://127.0.0.1:18181/ready", timeout=2) as r:
                return r.status == 200

        wait_for(coredns_ready, 30, "CoreDNS ready")
        TIMINGS["real kubelet cluster usable (s)"] = time.monotonic() - t_start
        yield c
    finally:
        stop_names.set()
        if names is not None:
            names.join(10)
        node.stop()
        if os.environ.get("E2E_KEEP") != "1":
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"\ne2e state kept in {root}")


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    kind = os.environ.get("E2E_CLUSTER", "stand-in")
    if kind == "kind":
        from kindcluster import kind_cluster

        with kind_cluster(_clients_bin()) as c:
            yield c
    elif kind == "stand-in":
        with local_cluster() as c:
            yield c
    elif kind in ("local", "local-kubelet"):
        with kubelet_cluster() as c:
            yield c
    else:
        raise pytest.UsageError(f"E2E_CLUSTER must be local, stand-in or kind, not {kind!r}")


OPERATOR_NS = "metaquorum-system"


@pytest.fixture(scope="session")
def operator(cluster: Cluster) -> str:
    """helm install the chart; returns the operator's namespace once its Deployment is ready."""
    t0 = time.monotonic()
    values = ["--set", "operator.reconcileInterval=1"]
    if cluster.kind != "stand-in":  # real containers: the image built from operator/Dockerfile
        values = [
            "--set",
            "image.repository=metaquorum/operator",
            "--set",
            "image.tag=e2e",
            *(values if cluster.kind == "local" else []),
        ]
    cluster.helm(
        "install",
        "metaquorum",
        str(ROOT / "charts" / "metaquorum"),
        "--namespace",
        OPERATOR_NS,
        "--create-namespace",
        *values,
    )
    wait_for(
        lambda: (
            (
                cluster.apps.read_namespaced_deployment_status(
                    "metaquorum", OPERATOR_NS
                ).status.ready_replicas
                or 0
            )
            >= 1
        ),
        60,
        "the operator Deployment to be ready",
    )
    TIMINGS["helm install to operator ready (s)"] = time.monotonic() - t0
    return OPERATOR_NS


_counter: list[int] = []


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    _counter.append(1)
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.originalname.lower().replace("_", "-"))
    name = f"t{len(_counter)}-{base.removeprefix('test-')}"[:50].strip("-")
    cluster.core.create_namespace({"metadata": {"name": name}})
    yield name
    cluster.core.delete_namespace(name)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("e2e timings")
        for k, v in TIMINGS.items():
            terminalreporter.write_line(f"{k}: {v:.1f}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test that had a cluster and a namespace: the cluster's side goes into its report
    (diagnostics.collect), gathered before the namespace's teardown deletes it."""
    outcome = yield
    rep = outcome.get_result()
    funcargs = getattr(item, "funcargs", {})
    cluster, ns = funcargs.get("cluster"), funcargs.get("namespace")
    if rep.failed and rep.when == "call" and isinstance(cluster, Cluster) and ns:
        import diagnostics

        rep.sections.append(("e2e diagnostics", diagnostics.collect(cluster, ns)))

"""Start the e2e tier's clusters on this machine: the kubelet stand-in's and the real kubelet's.

Role: `local_cluster()` (E2E_CLUSTER=stand-in) starts the control plane (controlplane.py) and
the kubelet stand-in (kubelet.py) as a child process; `kubelet_cluster()` (E2E_CLUSTER=local)
starts a real single-node Kubernetes (kubeletcluster.py) and keeps the test process's hosts
file from the API (hostsfile.follow). Each yields a `harness.Cluster` once it is usable (node
Ready, the default ServiceAccount, CoreDNS on the real kubelet) and records its start times in
harness.TIMINGS. kind's counterpart is kindcluster.py.

Invariants: every process started here has its pid file under the cluster's state dir (under
E2E_STATE_ROOT, which run.sh's exit trap also stops) and is stopped by PID on exit; the state
dir is removed unless E2E_KEEP=1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import hostsfile
from controlplane import ControlPlane
from harness import HERE, TIMINGS, Cluster, clients_bin, wait_for
from kubeletcluster import KubeletNode
from kubernetes import config


@contextlib.contextmanager
def local_cluster() -> Iterator[Cluster]:
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
            clients_bin(),
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
            clients_bin(),
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

        node.wait_usable(api)
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

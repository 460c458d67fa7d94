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
its own namespace and deletes it after. Start times are printed in the terminal summary; a
failed test's report gets an "e2e diagnostics" section (diagnostics.py).

Invariant: fixtures and hooks only, and no module imports this one. What tests share is in
harness.py (`Cluster`, `wait_for`, OPERATOR_NS, TIMINGS); the clusters are started by
clusters.py (stand-in, real kubelet) and kindcluster.py.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from typing import Any

import diagnostics
import pytest
from clusters import kubelet_cluster, local_cluster
from harness import OPERATOR_NS, TIMINGS, Cluster, clients_bin, package_chart, wait_for
from kindcluster import kind_cluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    kind = os.environ.get("E2E_CLUSTER", "stand-in")
    if kind == "kind":
        with kind_cluster(clients_bin()) as c:
            yield c
    elif kind == "stand-in":
        with local_cluster() as c:
            yield c
    elif kind in ("local", "local-kubelet"):
        with kubelet_cluster() as c:
            yield c
    else:
        raise pytest.UsageError(f"E2E_CLUSTER must be local, stand-in or kind, not {kind!r}")


@pytest.fixture(scope="session")
def operator(cluster: Cluster) -> str:
    """helm install the chart; returns the operator's namespace once its Deployment is ready."""
    t0 = time.monotonic()
    # fsResizeGraceMs: test_operator_volumes' offline class waits 15 s, not the default 60 s
    values = ["--set", "operator.reconcileInterval=1", "--set", "operator.fsResizeGraceMs=15000"]
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
        package_chart(cluster),  # the dist/ package, as a user installs it
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
        rep.sections.append(("e2e diagnostics", diagnostics.collect(cluster, ns)))

"""What a failed e2e test leaves in its report: the cluster's side of the story.

Role: `collect(cluster, namespace)` gathers, while the failed test's namespace still exists,
what is needed to tell a stuck operator from a slow cluster without re-running: each
MetadataQuorum's status (phase, voters, leader, the planner's step in the Progressing
condition), the namespace's pods (phase, ready, restarts; the conditions of those not ready,
e.g. PodScheduled=False and why), its last Events, and the tails of the operator's log (without
its per-reconcile and probe lines) and of the quorum pods' logs. conftest's
pytest_runtest_makereport hook adds it as an "e2e diagnostics" section of the failure, so it
reaches CI's log (the cluster itself is gone by then).

Invariants: never raises (each part that fails says so in one line); bounded output (tails
only), so a failure's report stays readable.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from harness import OPERATOR_NS, Cluster

OPERATOR_LOG_LINES = 60
POD_LOG_LINES = 15
EVENTS = 25


def _part(title: str, fn: Callable[[], str]) -> str:
    try:
        body = fn()
    except Exception as e:  # the cluster may be half gone: say so, go on
        body = f"(unavailable: {type(e).__name__}: {str(e)[:200]})"
    return f"--- {title}\n{body.rstrip()}\n"


def _quorums(cluster: Cluster, ns: str) -> str:
    out = cluster.kubectl("get", "metadataquorums", "-n", ns, "-o", "json").stdout
    lines = []
    for obj in json.loads(out)["items"]:
        st = obj.get("status") or {}
        lines.append(
            f"{obj['metadata']['name']}: generation {obj['metadata'].get('generation')}, "
            f"spec.replicas {obj['spec'].get('replicas')}, status "
            + json.dumps({k: v for k, v in st.items() if k != "conditions"}, sort_keys=True)
        )
        for c in st.get("conditions") or []:
            lines.append(
                f"  {c.get('type')}={c.get('status')} {c.get('reason')}: {c.get('message')}"
            )
    return "\n".join(lines) or "(none)"


def _tail(text: str, n: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


# lines of the operator's log that say nothing: every reconcile that ran, every probe
NOISE = ("Timer 'reconcile' succeeded", "aiohttp.access")


def _operator_log(cluster: Cluster) -> str:
    proc = cluster.kubectl(
        "logs", "deploy/metaquorum", "-n", OPERATOR_NS, "--tail=2000", check=False
    )
    lines = [x for x in (proc.stdout or proc.stderr).splitlines() if not any(n in x for n in NOISE)]
    return "\n".join(lines[-OPERATOR_LOG_LINES:])


def _unready_pods(cluster: Cluster, ns: str) -> str:
    out = []
    for p in cluster.core.list_namespaced_pod(ns).items:
        conds = p.status.conditions or []
        if any(c.type == "Ready" and c.status == "True" for c in conds):
            continue
        out.append(f"{p.metadata.name} ({p.status.phase}):")
        out += [f"  {c.type}={c.status} {c.reason or ''} {c.message or ''}" for c in conds]
    return "\n".join(out) or "(every pod ready)"


def _pod_logs(cluster: Cluster, ns: str) -> str:
    out = []
    for p in cluster.core.list_namespaced_pod(ns).items:
        for c in p.spec.containers:
            proc = cluster.kubectl(
                "logs",
                p.metadata.name,
                "-n",
                ns,
                "-c",
                c.name,
                f"--tail={POD_LOG_LINES}",
                check=False,
            )
            out.append(
                f"[{p.metadata.name}/{c.name}]\n{_tail(proc.stdout or proc.stderr, POD_LOG_LINES)}"
            )
    return "\n".join(out) or "(no pods)"


def collect(cluster: Cluster, ns: str) -> str:
    """The failed test's namespace `ns` and the operator, as text (never raises)."""
    parts = [
        _part(f"MetadataQuorums in {ns}", lambda: _quorums(cluster, ns)),
        _part(
            f"pods in {ns}",
            lambda: cluster.kubectl("get", "pods", "-n", ns, "-o", "wide", check=False).stdout,
        ),
        _part(f"pods not ready in {ns}: their conditions", lambda: _unready_pods(cluster, ns)),
        _part(
            f"last {EVENTS} Events in {ns}",
            # creationTimestamp: the scheduler's events (events.k8s.io) have no lastTimestamp
            lambda: _tail(
                cluster.kubectl(
                    "get", "events", "-n", ns, "--sort-by=.metadata.creationTimestamp", check=False
                ).stdout,
                EVENTS,
            ),
        ),
        _part(
            f"operator log (last {OPERATOR_LOG_LINES} lines but reconcile and probe lines)",
            lambda: _operator_log(cluster),
        ),
        _part(
            f"pod logs in {ns} (last {POD_LOG_LINES} lines each)", lambda: _pod_logs(cluster, ns)
        ),
    ]
    return "".join(parts)

"""Prometheus metrics of the operator: reconciles by outcome, actions by kind, errors, and the
voter count it last observed per MetadataQuorum.

Role: counters the handlers bump (handlers.py) on a registry of their own, served on
`METAQUORUM_METRICS_PORT` (default 9090; 0 turns it off) at the pod IP by `serve`, in
Prometheus text format; the chart's optional ServiceMonitor scrapes it.

Invariants: metric names carry the `metaquorum_operator_` prefix and counters end in `_total`
(prometheus_client appends it); label values are planner class names or Kubernetes names, so
their number is bounded by the resources the operator runs.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

REGISTRY = CollectorRegistry()
RECONCILES = Counter(
    "metaquorum_operator_reconciles",
    "Reconcile runs, by the planner's last decision (Converged, Wait, Refused, ...)",
    ["outcome"],
    registry=REGISTRY,
)
ACTIONS = Counter(
    "metaquorum_operator_actions",
    "Actions executed, by kind (Apply, ScaleStatefulSet, DeletePod, ResignLeader, AddVoter, "
    "RemoveVoter)",
    ["kind"],
    registry=REGISTRY,
)
ERRORS = Counter(
    "metaquorum_operator_errors",
    "Errors, by kind (VoterChangeFailed, NotOwned)",
    ["kind"],
    registry=REGISTRY,
)
VOTERS = Gauge(
    "metaquorum_operator_quorum_voters",
    "Voters in the quorum's last DescribeQuorum answer (absent while not observed)",
    ["namespace", "name"],
    registry=REGISTRY,
)


def serve(env: dict[str, str] | None = None) -> int:
    """Start the /metrics server (a daemon thread); returns its port, 0 when turned off."""
    env = dict(os.environ) if env is None else env
    port = int(env.get("METAQUORUM_METRICS_PORT", "9090") or 0)
    if port:
        start_http_server(port, addr=env.get("POD_IP") or "0.0.0.0", registry=REGISTRY)
    return port

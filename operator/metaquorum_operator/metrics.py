"""Prometheus metrics of the operator: reconciles by outcome, actions by kind, errors, the
voter count it last observed per MetadataQuorum, and how long an operation has been stuck.

Role: counters the handlers bump (handlers.py) on a registry of their own, served on
`METAQUORUM_METRICS_PORT` (default 9090; 0 turns it off) at the pod IP by `serve`, in
Prometheus text format; the chart's optional ServiceMonitor scrapes it.

Invariants: metric names carry the `metaquorum_operator_` prefix and counters end in `_total`
(prometheus_client appends it); label values are planner class names or Kubernetes names, so
their number is bounded by the resources the operator runs. The stuck-operation gauge
(`Stuck`): seconds since the last successful step of the operation in progress (the planner has
something to do: not Converged, not Paused), 0 while there is none; what the chart's
MetaquorumOperationStuck alert reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

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


OPERATION_STUCK = Gauge(
    "metaquorum_operator_operation_stuck_seconds",
    "Seconds since the last successful step of the operation in progress on this MetadataQuorum"
    " (0 when converged or paused)",
    ["namespace", "name"],
    registry=REGISTRY,
)


@dataclass
class Stuck:
    """When each quorum's operation last made a step (milliseconds), while one is in progress."""

    last_step_ms: dict[tuple[str, str], int] = field(default_factory=dict)

    def stepped(self, key: tuple[str, str], now_ms: int) -> None:
        """An action of the operation succeeded."""
        self.last_step_ms[key] = now_ms

    def seconds(self, key: tuple[str, str], busy: bool, now_ms: int) -> float:
        """The gauge's value after a reconcile: 0 when idle (and forget the operation), else the
        seconds since its last successful step (or since it was first seen waiting)."""
        if not busy:
            self.last_step_ms.pop(key, None)
            return 0.0
        since = self.last_step_ms.setdefault(key, now_ms)
        return max(0.0, (now_ms - since) / 1000)


def serve(env: dict[str, str] | None = None) -> int:
    """Start the /metrics server (a daemon thread); returns its port, 0 when turned off."""
    env = dict(os.environ) if env is None else env
    port = int(env.get("METAQUORUM_METRICS_PORT", "9090") or 0)
    if port:
        start_http_server(port, addr=env.get("POD_IP") or "0.0.0.0", registry=REGISTRY)
    return port

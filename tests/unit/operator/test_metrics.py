"""The operator's /metrics: served at the given address and port, Prometheus text, our names."""

from __future__ import annotations

import socket
import urllib.request

from metaquorum_operator import metrics


def test_metrics_are_served_with_the_operator_prefix() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert metrics.serve({"METAQUORUM_METRICS_PORT": "0"}) == 0  # off
    assert metrics.serve({"METAQUORUM_METRICS_PORT": str(port), "POD_IP": "127.0.0.1"}) == port
    metrics.ACTIONS.labels("AddVoter").inc()
    metrics.RECONCILES.labels("Converged").inc()
    metrics.VOTERS.labels("ns", "q").set(3)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    assert 'metaquorum_operator_actions_total{kind="AddVoter"} 1.0' in text
    assert 'metaquorum_operator_reconciles_total{outcome="Converged"} 1.0' in text
    assert 'metaquorum_operator_quorum_voters{name="q",namespace="ns"} 3.0' in text


def test_the_stuck_gauge_counts_from_the_last_successful_step_and_is_zero_when_idle() -> None:
    stuck, key = metrics.Stuck(), ("ns", "q")
    assert stuck.seconds(key, busy=False, now_ms=1_000) == 0.0
    assert stuck.seconds(key, busy=True, now_ms=2_000) == 0.0  # first seen waiting
    assert stuck.seconds(key, busy=True, now_ms=32_000) == 30.0
    stuck.stepped(key, 40_000)
    assert stuck.seconds(key, busy=True, now_ms=45_500) == 5.5
    assert stuck.seconds(key, busy=False, now_ms=50_000) == 0.0
    assert stuck.seconds(key, busy=True, now_ms=60_000) == 0.0  # a new operation

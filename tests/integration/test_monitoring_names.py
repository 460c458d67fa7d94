"""Every metric the chart's Grafana dashboard and PrometheusRule query exists: on a live node's
/metrics (a real `metaquorum server start`, the leader of a one-voter quorum, so the
leader-only gauges are there too) or in the operator's metrics registry.

Oracle: the node's own exposition and prometheus_client's registry; the names are taken from
the PromQL of the dashboard's targets and the rule's expressions (`metric_names`: label
matchers, ranges, grouping label lists, functions and keywords removed).
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest
from metaquorum_operator import backup_metrics, metrics

from tests.integration.quorum_fixture import running_quorum

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "metaquorum"
KEYWORDS = {"by", "on", "and", "or", "unless", "group_left", "group_right", "bool", "offset"}
# aggregation operators: followed by `by (...)` rather than `(`
KEYWORDS |= {"sum", "min", "max", "avg", "count", "group", "stddev", "stdvar", "topk", "bottomk"}
KEYWORDS |= {"quantile", "count_values", "without", "ignoring"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads."""
    e = re.sub(r'"[^"]*"', "", expr)  # strings
    e = re.sub(r"\{[^}]*\}", "", e)  # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)  # ranges and subqueries
    e = re.sub(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", e)
    e = re.sub(r"[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(", "(", e)  # functions and aggregations
    found = set(re.findall(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b", e))
    return {n for n in found - KEYWORDS if not re.fullmatch(r"\d.*|e", n)}


def test_metric_names_parses_what_the_dashboard_writes() -> None:
    expr = (
        'max by (service) (a_b{namespace=~"$ns"}) - on (service) group_right c_d'
        " and on (pod) (changes(e_f[5m:30s]) == 0) / rate(g_total[5m]) * 60"
    )
    assert metric_names(expr) == {"a_b", "c_d", "e_f", "g_total"}


def queried() -> dict[str, set[str]]:
    """Metric name -> where it is queried (dashboard panel titles, alert names)."""
    out: dict[str, set[str]] = {}
    dashboard = json.loads((CHART / "dashboards" / "metaquorum-raft.json").read_text())
    for panel in dashboard["panels"]:
        for t in panel["targets"]:
            for name in metric_names(t["expr"]):
                out.setdefault(name, set()).add(panel["title"])
    template = (CHART / "templates" / "prometheusrule.yaml").read_text()
    for expr in re.findall(r"expr: (?:>-\n)?((?:.|\n)*?)\n\s+(?:for|labels):", template):
        expr = re.sub(r"\{\{[^}]*\}\}", "1", expr)  # helm values: numbers
        for name in metric_names(expr):
            out.setdefault(name, set()).add("PrometheusRule")
    return out


def operator_names() -> set[str]:
    names = set()
    for family in metrics.REGISTRY.collect():
        names.add(family.name)
        if family.type == "counter":
            names.add(family.name + "_total")
    return names


def test_every_metric_the_dashboard_and_the_rules_query_exists(tmp_path: Path) -> None:
    wanted = queried()
    assert "kafka_server_raft_metrics_current_leader" in wanted
    assert "metaquorum_operator_operation_stuck_seconds" in wanted
    assert "metaquorum_log_dir_available_bytes" in wanted
    assert "metaquorum_operator_backup_failing" in wanted
    assert backup_metrics.ALL  # imported: its gauges are on the operator's registry
    with running_quorum(tmp_path, voters=1) as q:
        q.wait_for_leader(30)
        (node,) = q.nodes.values()
        url = f"http://127.0.0.1:{node.http_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode()
    node_names = {
        line.split(" ")[0].split("{")[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    live = node_names | operator_names()
    missing = {name: sorted(where) for name, where in wanted.items() if name not in live}
    assert missing == {}, f"queried but exported by neither a node nor the operator: {missing}"

"""The chart's PrometheusRule and Grafana dashboard: promtool checks the rule as helm renders it
and runs unit tests of its alerts; each alert's runbook names a section of docs/operator.md
that exists; the dashboard JSON has the shape Grafana loads.

promtool comes from the Go module proxy (e2e/tools/build-promtool.sh, cached; `make test`'s
prebuild builds it ahead), helm from e2e/tools/install-clients.sh (cached). Marker `slow`: a
few seconds with warm caches (three process runs), minutes on a machine that builds promtool.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "metaquorum"
DASHBOARD = CHART / "dashboards" / "metaquorum-raft.json"
# the first test's setup may build promtool cold (Prometheus's module, one Go process at a
# time): over 10 minutes on a busy 2-core machine (seen: killed at the default 600 s while other
# Go builds ran), so the module's items get 30 minutes; with a warm cache they take seconds
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _tool_dir(script: str) -> Path:
    out = subprocess.run(
        [str(ROOT / "e2e" / "tools" / script)], check=True, stdout=subprocess.PIPE, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def rendered_rule(*values: str) -> dict[str, Any]:
    helm = _tool_dir("install-clients.sh") / "helm"
    out = subprocess.run(
        [
            str(helm),
            "template",
            "mq",
            str(CHART),
            "--set",
            "prometheusRule.enabled=true",
            *values,
            "--show-only",
            "templates/prometheusrule.yaml",
        ],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    rule = yaml.safe_load(out)
    assert rule["kind"] == "PrometheusRule"
    return dict(rule)


def rule_groups() -> dict[str, Any]:
    return {"groups": rendered_rule()["spec"]["groups"]}


def alerts() -> list[dict[str, Any]]:
    return [r for g in rule_groups()["groups"] for r in g["rules"] if "alert" in r]


@pytest.fixture(scope="module")
def promtool() -> Path:
    return _tool_dir("build-promtool.sh") / "promtool"


def run(promtool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(promtool), *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_promtool_checks_the_rendered_rule(promtool: Path, tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups()))
    proc = run(promtool, "check", "rules", "rules.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 6 rules found" in proc.stdout, proc.stdout


def test_promtool_checks_a_broken_rule_too(promtool: Path, tmp_path: Path) -> None:
    broken = rule_groups()
    broken["groups"][0]["rules"][0]["expr"] = "max by (namespace (x"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(broken))
    assert run(promtool, "check", "rules", "rules.yaml", cwd=tmp_path).returncode != 0


LEADER = 'kafka_server_raft_metrics_current_leader{namespace="ns", service="q", pod="q-%d"}'
STUCK = 'metaquorum_operator_operation_stuck_seconds{namespace="ns", name="q"}'
TESTS = {
    "rule_files": ["rules.yaml"],
    "evaluation_interval": "30s",
    "tests": [
        {
            # leader 1 until minute 2, then every node reports -1 (no leader)
            "interval": "30s",
            "input_series": [{"series": LEADER % i, "values": "1x4 -1x10"} for i in range(3)],
            "alert_rule_test": [
                {"eval_time": "2m30s", "alertname": "MetaquorumNoLeader", "exp_alerts": []},
                {
                    "eval_time": "3m30s",
                    "alertname": "MetaquorumNoLeader",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                "severity": "critical",
                                "namespace": "ns",
                                "service": "q",
                            },
                            "exp_annotations": {
                                "summary": "MetadataQuorum ns/q has no leader",
                                "description": "No node of the quorum has known a leader for"
                                " 1 minute: it commits no metadata.",
                                "runbook": "docs/operator.md#metaquorumnoleader",
                            },
                        }
                    ],
                },
            ],
        },
        {
            # one node of three still sees the leader: no alert
            "interval": "30s",
            "input_series": [
                {"series": LEADER % 0, "values": "1x10"},
                {"series": LEADER % 1, "values": "-1x10"},
            ],
            "alert_rule_test": [
                {"eval_time": "4m", "alertname": "MetaquorumNoLeader", "exp_alerts": []}
            ],
        },
        {
            # the gauge counts up 60 s a minute; 600 s is crossed at minute 10
            "interval": "1m",
            "input_series": [{"series": STUCK, "values": "0+60x15"}],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "MetaquorumOperationStuck", "exp_alerts": []},
                {
                    "eval_time": "11m",
                    "alertname": "MetaquorumOperationStuck",
                    "exp_alerts": [
                        {
                            "exp_labels": {"severity": "warning", "namespace": "ns", "name": "q"},
                            "exp_annotations": {
                                "summary": "The operator's operation on MetadataQuorum ns/q is"
                                " stuck",
                                "description": "No step of the operation in progress has"
                                " succeeded for 660 s.",
                                "runbook": "docs/operator.md#metaquorumoperationstuck",
                            },
                        }
                    ],
                },
            ],
        },
    ],
}


def test_promtool_unit_tests_of_the_no_leader_and_stuck_operation_alerts(
    promtool: Path, tmp_path: Path
) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups()))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(TESTS))
    proc = run(promtool, "test", "rules", "tests.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout, proc.stdout


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as dashes."""
    out = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^a-z0-9 _-]", "", text).replace(" ", "-"))
    return out


def test_every_alert_has_a_runbook_line_naming_a_section_that_exists() -> None:
    found = anchors((ROOT / "docs" / "operator.md").read_text())
    names = [a["alert"] for a in alerts()]
    assert names == [
        "MetaquorumNoLeader",
        "MetaquorumVoterLagging",
        "MetaquorumOperationStuck",
        "MetaquorumDiskNearlyFull",
        "MetaquorumBackupFailing",
        "MetaquorumBackupStale",
    ]
    for a in alerts():
        doc, _, anchor = a["annotations"]["runbook"].partition("#")
        assert doc == "docs/operator.md" and anchor in found, a["annotations"]["runbook"]
        assert a["annotations"]["summary"] and a["labels"]["severity"] in ("critical", "warning")


def test_the_rule_is_off_by_default() -> None:
    helm = _tool_dir("install-clients.sh") / "helm"
    proc = subprocess.run(
        [str(helm), "template", "mq", str(CHART), "--show-only", "templates/prometheusrule.yaml"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and "could not find template" in proc.stderr, proc.stderr


def test_the_dashboard_has_the_shape_grafana_loads() -> None:
    d = json.loads(DASHBOARD.read_text())
    assert {"title", "uid", "schemaVersion", "panels", "templating"} <= set(d)
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: set[tuple[int, int]] = set()
    for p in d["panels"]:
        assert p["type"] in ("timeseries", "stat") and p["title"], p
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine
        refs = [t["refId"] for t in p["targets"]]
        assert refs and len(refs) == len(set(refs)) and all(t["expr"] for t in p["targets"])
    titles = " ".join(p["title"] for p in d["panels"]).lower()
    for topic in (
        "leader",
        "epoch",
        "high watermark",
        "commit latency",
        "fetch",
        "voters",
        "observers",
        "lag",
        "uncommitted voter change",
        "elections",
    ):
        assert topic in titles, topic

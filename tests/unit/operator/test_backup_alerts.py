"""The backup alerts of the chart's PrometheusRule (MetaquorumBackupFailing, MetaquorumBackupStale)
name metrics the operator registers (backup_metrics.py). promtool checks the whole rendered
rule in test_alerts.py; tests/integration/test_monitoring_names.py checks every name again
against the live registry."""

from __future__ import annotations

import re
from pathlib import Path

from metaquorum_operator import backup_metrics

TEMPLATE = (
    Path(__file__).resolve().parents[3]
    / "charts"
    / "metaquorum"
    / "templates"
    / "prometheusrule.yaml"
)


def test_backup_rules_use_registered_metrics() -> None:
    text = TEMPLATE.read_text()
    alerts = dict(
        re.findall(r"- alert: (MetaquorumBackup\w+)\n\s+expr: (?:>-\n)?((?:.|\n)*?)\n\s+for:", text)
    )
    assert set(alerts) == {"MetaquorumBackupFailing", "MetaquorumBackupStale"}
    known = {g._name for g in backup_metrics.ALL}
    for name, expr in alerts.items():
        used = set(re.findall(r"metaquorum_operator_[a-z_]+", expr))
        assert used and used <= known, (name, used - known)

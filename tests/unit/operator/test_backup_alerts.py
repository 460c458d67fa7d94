"""The backup alert rules (docs/alerts/metaquorum-backup.rules.yaml) name metrics the operator
registers, and MetaquorumBackupFailing is there."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from metaquorum_operator import backup_metrics

RULES = Path(__file__).resolve().parents[3] / "docs" / "alerts" / "metaquorum-backup.rules.yaml"


def test_rules_use_registered_metrics() -> None:
    doc = yaml.safe_load(RULES.read_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    assert "MetaquorumBackupFailing" in [r["alert"] for r in rules]
    known = {g._name for g in backup_metrics.ALL}
    for r in rules:
        used = set(re.findall(r"metaquorum_operator_[a-z_]+", r["expr"]))
        assert used, r["alert"]
        assert used <= known, (r["alert"], used - known)
        assert r["labels"]["severity"] in ("warning", "critical")

"""Prometheus metrics of the scheduled backups (spec.backup), on the operator's registry.

Role: gauges per MetadataQuorum set from status.backup at each reconcile (`record`): when the
last successful backup finished, how long `backup create` took and how large it was, and
whether the last backup Job failed. The alert rule `MetaquorumBackupFailing`
(the chart's PrometheusRule, docs/operator.md "Alerts and runbooks") reads them.

Invariants: names carry the `metaquorum_operator_backup_` prefix; labels are the resource's
namespace and name; a quorum without spec.backup has no samples (`forget`).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import Gauge

from metaquorum_operator.metrics import REGISTRY

LABELS = ["namespace", "name"]
LAST_SUCCESS = Gauge(
    "metaquorum_operator_backup_last_success_timestamp_seconds",
    "When the last successful backup Job finished (Unix time)",
    LABELS,
    registry=REGISTRY,
)
DURATION = Gauge(
    "metaquorum_operator_backup_last_duration_seconds",
    "How long the last successful `metaquorum backup create` took",
    LABELS,
    registry=REGISTRY,
)
SIZE = Gauge(
    "metaquorum_operator_backup_last_size_bytes",
    "Total size of the files of the last successful backup",
    LABELS,
    registry=REGISTRY,
)
FAILING = Gauge(
    "metaquorum_operator_backup_failing",
    "1 while the BackupFailing condition is True (the last backup Job failed, or spec.backup "
    "was refused), else 0",
    LABELS,
    registry=REGISTRY,
)
ALL = (LAST_SUCCESS, DURATION, SIZE, FAILING)


def _unix(rfc3339: str) -> float:
    return float(calendar.timegm(time.strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ")))


def record(
    namespace: str, name: str, fields: Mapping[str, Any], condition: Mapping[str, Any]
) -> None:
    FAILING.labels(namespace, name).set(1 if condition.get("status") == "True" else 0)
    last = fields.get("lastSuccessful") or {}
    if last.get("time"):
        LAST_SUCCESS.labels(namespace, name).set(_unix(str(last["time"])))
    if "durationSeconds" in last:
        DURATION.labels(namespace, name).set(float(last["durationSeconds"]))
    if "sizeBytes" in last:
        SIZE.labels(namespace, name).set(float(last["sizeBytes"]))


def forget(namespace: str, name: str) -> None:
    for gauge in ALL:
        try:
            gauge.remove(namespace, name)
        except KeyError:
            continue

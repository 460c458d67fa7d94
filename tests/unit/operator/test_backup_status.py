"""Scheduled backups, the operator side: objects converged from spec.backup (created, updated,
deleted, a foreign object left alone, nothing while paused), status.backup and BackupFailing
from the CronJob's Jobs, one Event per finished Job, the metrics."""

from __future__ import annotations

import json
from typing import Any

from metaquorum_operator import backup_metrics, backups, builders
from metaquorum_operator.backup_kube import BackupKube, reconcile
from metaquorum_operator.backup_status import (
    ObservedBackup,
    ObservedJob,
    Write,
    backup_status,
    steps,
    summary_of,
)
from metaquorum_operator.backups import BackupSpec
from metaquorum_operator.model import Names, Owner, QuorumSpec
from metaquorum_operator.observed import ObservedObject

NAMES = Names("q", "ns")
OWNER = Owner("q", "uid-1")
SPEC = {"backup": {"schedule": "0 * * * *", "pvc": {"claimName": "bk"}}}
BACKUP = BackupSpec.from_spec(SPEC, NAMES)
NOW = "2026-11-26T12:00:00Z"


def _ours(manifest: dict[str, Any]) -> ObservedObject:
    return ObservedObject(manifest["metadata"]["annotations"][builders.SPEC_HASH], ("uid-1",))


def _current() -> ObservedBackup:
    assert BACKUP is not None
    return ObservedBackup(
        service_account=_ours(backups.service_account(NAMES, OWNER)),
        cronjob=_ours(backups.cronjob(BACKUP, QuorumSpec(), NAMES, OWNER)),
    )


def test_steps_create_update_delete() -> None:
    assert BACKUP is not None
    fresh = steps(BACKUP, QuorumSpec(), NAMES, OWNER, ObservedBackup())
    assert [(w.kind, w.op) for w in fresh] == [("ServiceAccount", "create"), ("CronJob", "create")]
    assert steps(BACKUP, QuorumSpec(), NAMES, OWNER, _current()) == []
    changed = steps(BACKUP, QuorumSpec(image="other:1"), NAMES, OWNER, _current())
    assert [(w.kind, w.op) for w in changed] == [("CronJob", "patch")]
    gone = steps(None, QuorumSpec(), NAMES, OWNER, _current())
    assert gone == [
        Write("CronJob", "q-backup", "delete"),
        Write("ServiceAccount", "q-backup", "delete"),
    ]
    foreign = ObservedBackup(cronjob=ObservedObject("x", ("someone-else",)))
    assert steps(None, QuorumSpec(), NAMES, OWNER, foreign) == []
    assert [w.kind for w in steps(BACKUP, QuorumSpec(), NAMES, OWNER, foreign)] == [
        "ServiceAccount"
    ]


def _summary(name: str, end: int, size: int) -> str:
    doc = {
        "name": name,
        "url": f"s3://b/p/{name}",
        "endOffset": end,
        "sizeBytes": size,
        "durationSeconds": 2.5,
    }
    return json.dumps(doc)


OK1 = ObservedJob(
    "q-backup-1", "2026-11-26T10:00:05Z", succeeded=True, message=_summary("n1", 10, 100)
)
OK2 = ObservedJob(
    "q-backup-2", "2026-11-26T11:00:05Z", succeeded=True, message=_summary("n2", 20, 200)
)
BAD3 = ObservedJob(
    "q-backup-3",
    "2026-11-26T11:30:00Z",
    failed=True,
    message="metaquorum backup create: s3://b/p: S3 refused the credentials"
    " (SignatureDoesNotMatch)",
    failure_reason="BackoffLimitExceeded",
)


def test_summary_of() -> None:
    assert summary_of("noise\n" + _summary("n", 1, 2))["name"] == "n"  # type: ignore[index]
    assert summary_of("metaquorum backup create: failed") is None
    assert summary_of(None) is None


def test_last_successful_and_events_once() -> None:
    assert BACKUP is not None
    r = backup_status(BACKUP, None, ObservedBackup(jobs=(OK1, OK2)), {}, generation=1, now=NOW)
    assert r is not None
    last = r.fields["lastSuccessful"]
    assert last == {
        "time": OK2.finished_at,
        "job": "q-backup-2",
        "name": "n2",
        "url": "s3://b/p/n2",
        "endOffset": 20,
        "sizeBytes": 200,
        "durationSeconds": 2.5,
    }
    assert r.fields["lastFailed"] is None
    assert (r.condition["status"], r.condition["reason"]) == ("False", "BackupSucceeded")
    assert [e[1] for e in r.events] == ["BackupCompleted"]
    assert "end offset 20, 200 bytes" in r.events[0][2]
    previous = {"backup": r.fields, "conditions": [r.condition]}
    again = backup_status(
        BACKUP, None, ObservedBackup(jobs=(OK1, OK2)), previous, generation=1, now=NOW
    )
    assert again is not None and again.events == ()
    # the Job left the CronJob's history: the status keeps it
    later = backup_status(BACKUP, None, ObservedBackup(), previous, generation=1, now=NOW)
    assert later is not None and later.fields["lastSuccessful"] == last


def test_a_failed_job_sets_backup_failing_with_its_line() -> None:
    assert BACKUP is not None
    r = backup_status(
        BACKUP, None, ObservedBackup(jobs=(OK1, OK2, BAD3)), {}, generation=1, now=NOW
    )
    assert r is not None
    assert (r.condition["status"], r.condition["reason"]) == ("True", "BackupJobFailed")
    assert "SignatureDoesNotMatch" in r.condition["message"]
    assert r.fields["lastFailed"]["job"] == "q-backup-3"
    assert ("Warning", "BackupFailed") in [(e[0], e[1]) for e in r.events]
    # a later success clears it, and lastTransitionTime moves
    ok4 = ObservedJob("q-backup-4", "2026-11-26T12:00:05Z", succeeded=True, message="")
    prev = {"backup": r.fields, "conditions": [r.condition]}
    r2 = backup_status(
        BACKUP,
        None,
        ObservedBackup(jobs=(OK2, BAD3, ok4)),
        prev,
        generation=1,
        now="2026-11-26T12:01:00Z",
    )
    assert r2 is not None
    assert (r2.condition["status"], r2.fields["lastFailed"]) == ("False", None)
    assert r2.fields["lastSuccessful"] == {"time": ok4.finished_at, "job": "q-backup-4"}
    assert r2.condition["lastTransitionTime"] == "2026-11-26T12:01:00Z"


def test_no_job_yet_and_no_backup_spec() -> None:
    assert BACKUP is not None
    r = backup_status(BACKUP, None, ObservedBackup(), {}, generation=1, now=NOW)
    assert r is not None and r.condition["reason"] == "NoBackupYet"
    assert r.condition["status"] == "False"
    assert backup_status(None, None, ObservedBackup(), {}, generation=1, now=NOW) is None


class FakeKube(BackupKube):
    def __init__(self, observed: ObservedBackup) -> None:
        self.observed = observed
        self.writes: list[Write] = []

    def observe(self, names: Names) -> ObservedBackup:
        return self.observed

    def apply(self, write: Write, names: Names) -> None:
        self.writes.append(write)


def _reconcile(
    kube: FakeKube,
    spec: dict[str, Any],
    paused: bool = False,
    previous: dict[str, Any] | None = None,
) -> tuple[Any, list[tuple[str, str, str]]]:
    posted: list[tuple[str, str, str]] = []
    r = reconcile(
        kube,
        spec=spec,
        quorum_spec=QuorumSpec(),
        names=NAMES,
        owner=OWNER,
        previous=previous or {},
        generation=3,
        now=NOW,
        paused=paused,
        post=lambda *e: posted.append(e),
    )
    return r, posted


def test_reconcile_writes_posts_and_records_metrics() -> None:
    kube = FakeKube(ObservedBackup(jobs=(OK1, OK2, BAD3)))
    r, posted = _reconcile(kube, SPEC)
    assert [(w.kind, w.op) for w in kube.writes] == [
        ("ServiceAccount", "create"),
        ("CronJob", "create"),
    ]
    assert [p[1] for p in posted] == [
        "BackupScheduled",
        "BackupScheduled",
        "BackupCompleted",
        "BackupFailed",
    ]
    assert r.condition["reason"] == "BackupJobFailed"
    sample = backup_metrics.REGISTRY.get_sample_value
    labels = {"namespace": "ns", "name": "q"}
    assert sample("metaquorum_operator_backup_failing", labels) == 1
    assert sample("metaquorum_operator_backup_last_size_bytes", labels) == 200
    assert sample("metaquorum_operator_backup_last_duration_seconds", labels) == 2.5
    assert (
        sample("metaquorum_operator_backup_last_success_timestamp_seconds", labels) == 1795690805
    )  # 2026-11-26T11:00:05Z
    # spec.backup removed: the objects go, the samples too
    kube2 = FakeKube(_current())
    r, _ = _reconcile(kube2, {})
    assert r is None and [w.op for w in kube2.writes] == ["delete", "delete"]
    assert sample("metaquorum_operator_backup_failing", labels) is None


def test_reconcile_paused_writes_nothing_and_a_bad_schedule_is_a_condition() -> None:
    kube = FakeKube(ObservedBackup())
    r, _ = _reconcile(kube, SPEC, paused=True)
    assert kube.writes == [] and r.condition["reason"] == "NoBackupYet"
    bad = {"backup": {"schedule": "99 * * * *", "pvc": {"claimName": "bk"}}}
    r, posted = _reconcile(kube, bad)
    assert kube.writes == []
    assert (r.condition["status"], r.condition["reason"]) == ("True", "InvalidBackupSpec")
    assert "minute: 99 is outside 0-59" in r.condition["message"]
    assert posted == [("Warning", "InvalidBackupSpec", r.condition["message"])]
    _, posted = _reconcile(kube, bad, previous={"conditions": [r.condition]})
    assert posted == []  # the Warning once per transition


def test_reconcile_leaves_a_foreign_cronjob_alone() -> None:
    kube = FakeKube(ObservedBackup(cronjob=ObservedObject("x", ("other",))))
    r, _ = _reconcile(kube, SPEC)
    assert [w.kind for w in kube.writes] == ["ServiceAccount"]
    assert (r.condition["status"], r.condition["reason"]) == ("True", "NotOwned")


def test_a_failed_prune_after_a_backup_says_so() -> None:
    assert BACKUP is not None
    job = ObservedJob(
        "q-backup-5", "2026-11-26T12:00:05Z", failed=True, message=_summary("n5", 9, 9)
    )
    r = backup_status(BACKUP, None, ObservedBackup(jobs=(job,)), {}, generation=1, now=NOW)
    assert r is not None and r.condition["status"] == "True"
    assert "backup n5 was taken but pruning failed" in r.condition["message"]

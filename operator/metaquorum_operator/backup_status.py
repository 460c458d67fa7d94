"""Scheduled backups, the pure half: which objects to write, and the status from the Jobs.

Role: `steps` compares the backup objects (backups.py: ServiceAccount and CronJob) with what
exists and returns the writes that converge them (create, patch, or delete when spec.backup is
gone); `backup_status` turns the CronJob's Jobs as observed (kube side: backup_kube.py) into
`status.backup`, the `BackupFailing` condition and the Events to post. handlers.py runs both
after the quorum's own reconcile (not while paused).

Status rules:
- `lastSuccessful` is the newest succeeded Job, with what `backup create` wrote as its pod's
  termination message (one JSON line: name, url, endOffset, sizeBytes, durationSeconds); kept
  from the previous status once the CronJob's history no longer holds that Job;
- `lastFailed` is the newest failed Job when it is newer than `lastSuccessful`, with its pod's
  termination message (the command's one error line: FallbackToLogsOnError) or the Job's
  failure reason;
- `BackupFailing` is True (BackupJobFailed) when the newest finished Job failed, True
  (InvalidBackupSpec) when the operator refused spec.backup, else False (BackupSucceeded, or
  NoBackupYet before any Job finished);
- one Event per finished Job, the first time it is seen: BackupCompleted (Normal) or
  BackupFailed (Warning).

Invariants: pure (no IO, no clock: `now` is given); deletes only the two objects it names, and
only when they carry this MetadataQuorum's ownerReference.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from metaquorum_operator import backups, builders
from metaquorum_operator.backups import BackupSpec
from metaquorum_operator.model import Names, Owner, QuorumSpec
from metaquorum_operator.observed import ObservedObject
from metaquorum_operator.status import condition

CONDITION = "BackupFailing"


@dataclass(frozen=True, slots=True)
class ObservedJob:
    """One Job of the backup CronJob. Times are RFC 3339 strings as the API gives them."""

    name: str
    finished_at: str | None = None  # completionTime, or the Failed condition's time
    succeeded: bool = False
    failed: bool = False
    message: str | None = None  # its pod's termination message
    failure_reason: str | None = None  # the Job's Failed condition message


@dataclass(frozen=True, slots=True)
class ObservedBackup:
    service_account: ObservedObject | None = None
    cronjob: ObservedObject | None = None
    jobs: tuple[ObservedJob, ...] = ()


@dataclass(frozen=True, slots=True)
class Write:
    kind: Literal["ServiceAccount", "CronJob"]
    name: str
    op: Literal["create", "patch", "delete"]
    manifest: dict[str, Any] | None = None


def steps(
    backup: BackupSpec | None,
    spec: QuorumSpec,
    names: Names,
    owner: Owner,
    observed: ObservedBackup,
) -> list[Write]:
    """The writes that bring the backup objects to `backup` (ServiceAccount before CronJob)."""
    name = backups.name_of(names)
    current = {"ServiceAccount": observed.service_account, "CronJob": observed.cronjob}
    if backup is None:
        return [
            Write(kind, name, "delete")
            for kind in ("CronJob", "ServiceAccount")
            if (found := current[kind]) is not None and owner.uid in found.owner_uids
        ]
    out: list[Write] = []
    desired: dict[Literal["ServiceAccount", "CronJob"], dict[str, Any]] = {
        "ServiceAccount": backups.service_account(names, owner),
        "CronJob": backups.cronjob(backup, spec, names, owner),
    }
    for kind, manifest in desired.items():
        found = current[kind]
        if found is None:
            out.append(Write(kind, name, "create", manifest))
        elif owner.uid not in found.owner_uids:
            continue  # not ours: never touched (the status says so)
        elif found.spec_hash != manifest["metadata"]["annotations"][builders.SPEC_HASH]:
            out.append(Write(kind, name, "patch", manifest))
    return out


def foreign(names: Names, owner: Owner, observed: ObservedBackup) -> str | None:
    """A one-line reason when an object with the backup objects' name is not ours."""
    pairs = (("ServiceAccount", observed.service_account), ("CronJob", observed.cronjob))
    for kind, found in pairs:
        if found is not None and owner.uid not in found.owner_uids:
            name = backups.name_of(names)
            return f"{kind} {name} exists and is not owned by this MetadataQuorum"
    return None


def summary_of(message: str | None) -> dict[str, Any] | None:
    """The JSON line `backup create` left as the termination message, or None."""
    for line in reversed((message or "").strip().splitlines()):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "name" in doc:
            return doc
    return None


def _last_line(message: str | None) -> str | None:
    lines = [x.strip() for x in (message or "").strip().splitlines() if x.strip()]
    return lines[-1][:1024] if lines else None


def _newest(jobs: Sequence[ObservedJob], succeeded: bool) -> ObservedJob | None:
    done = [j for j in jobs if (j.succeeded if succeeded else j.failed) and j.finished_at]
    return max(done, key=lambda j: (j.finished_at or "", j.name), default=None)


@dataclass(frozen=True, slots=True)
class BackupStatus:
    fields: dict[str, Any]
    condition: dict[str, Any]
    events: tuple[tuple[str, str, str], ...]  # (type, reason, message)


def backup_status(
    backup: BackupSpec | None,
    spec_error: str | None,
    observed: ObservedBackup,
    previous: Mapping[str, Any],
    *,
    generation: int,
    now: str,
) -> BackupStatus | None:
    """status.backup, the BackupFailing condition and new Events; None without spec.backup."""
    if backup is None and spec_error is None:
        return None
    prev_conds = previous.get("conditions") or []

    def cond(status: str, reason: str, message: str) -> dict[str, Any]:
        return condition(
            CONDITION, status, reason, message, generation=generation, now=now, previous=prev_conds
        )

    old = previous.get("backup") or {}
    if backup is None:
        assert spec_error is not None
        return BackupStatus(
            {"schedule": None, "url": None, **_kept(old)},
            cond("True", "InvalidBackupSpec", spec_error),
            (),
        )
    events: list[tuple[str, str, str]] = []
    fields: dict[str, Any] = {"schedule": backup.schedule, "url": backup.url, **_kept(old)}
    ok, bad = _newest(observed.jobs, True), _newest(observed.jobs, False)
    last_ok = old.get("lastSuccessful") or None
    seen = (last_ok or {}).get("time") or ""
    if ok is not None and (last_ok is None or seen <= (ok.finished_at or "")):
        entry: dict[str, Any] = {"time": ok.finished_at, "job": ok.name}
        s = summary_of(ok.message)
        if s is not None:
            for key in ("name", "url", "clusterId", "endOffset", "sizeBytes", "durationSeconds"):
                if key in s:
                    entry[key] = s[key]
        if last_ok is None or last_ok.get("job") != ok.name:
            what = entry.get("url") or ok.name
            size = f", {entry['sizeBytes']} bytes" if "sizeBytes" in entry else ""
            end = f", end offset {entry['endOffset']}" if "endOffset" in entry else ""
            text = f"backup {what}{end}{size} (Job {ok.name})"
            events.append(("Normal", "BackupCompleted", text))
        last_ok = entry
    fields["lastSuccessful"] = last_ok
    failing = bad is not None and (
        last_ok is None or (bad.finished_at or "") > (last_ok.get("time") or "")
    )
    if failing:
        assert bad is not None
        taken = summary_of(bad.message)
        if taken is not None:  # create wrote its summary, then prune failed
            why = f"backup {taken.get('name')} was taken but pruning failed (see the Job's log)"
        else:
            why = _last_line(bad.message) or bad.failure_reason or "the Job failed"
        fields["lastFailed"] = {"time": bad.finished_at, "job": bad.name, "message": why}
        if (old.get("lastFailed") or {}).get("job") != bad.name:
            events.append(("Warning", "BackupFailed", f"backup Job {bad.name} failed: {why}"))
        c = cond("True", "BackupJobFailed", f"the last backup Job {bad.name} failed: {why}")
    else:
        fields["lastFailed"] = None
        if last_ok is not None:
            c = cond(
                "False",
                "BackupSucceeded",
                f"last backup {last_ok.get('url') or last_ok.get('job')} at {last_ok.get('time')}",
            )
        else:
            c = cond("False", "NoBackupYet", f"no backup Job has finished yet ({backup.schedule})")
    return BackupStatus(fields, c, tuple(events))


def _kept(old: Mapping[str, Any]) -> dict[str, Any]:
    return {"lastSuccessful": old.get("lastSuccessful") or None, "lastFailed": None}

"""Scheduled backups, the Kubernetes half: observe the backup objects and Jobs, write them.

Role: `observe` reads the ServiceAccount and CronJob `<name>-backup` and the CronJob's Jobs
(label selector backups.job_selector) with the termination message of each finished Job's pod
(`backup create`'s JSON line, or the failing command's one error line); `apply` executes the
writes backup_status.steps chose; `reconcile` is the whole backup step handlers.py runs once per
reconcile, after the quorum's steps (objects untouched while paused; Events posted through
`post`; an API error or a refused spec becomes the BackupFailing condition, never an exception
that would stop the quorum's status).

Invariants: uncached GETs; writes only the ServiceAccount and the CronJob named by
backups.name_of, in the owner's namespace (the planner never sees them); a 409 on create or a
404 on delete is not an error (the next observation sees the truth). RBAC (chart rbac.yaml):
serviceaccounts and cronjobs get/create/patch/delete, jobs list, pods list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from metaquorum_operator import backup_metrics, backups
from metaquorum_operator.backup_status import (
    CONDITION,
    BackupStatus,
    ObservedBackup,
    ObservedJob,
    Write,
    backup_status,
    foreign,
    steps,
)
from metaquorum_operator.backups import BackupSpec, BackupSpecError
from metaquorum_operator.kube import MERGE, _get, _obj
from metaquorum_operator.model import Names, Owner, QuorumSpec
from metaquorum_operator.status import condition


def _time(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return str(value.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _job(job: Any, messages: dict[str, str]) -> ObservedJob:
    st = job.status
    name = str(job.metadata.name)
    succeeded = bool(st and (st.succeeded or 0) > 0)
    failed_cond = (
        next((c for c in (st.conditions or []) if c.type == "Failed" and c.status == "True"), None)
        if st
        else None
    )
    finished = _time(st.completion_time) if succeeded and st else None
    if failed_cond is not None:
        finished = _time(failed_cond.last_transition_time)
    return ObservedJob(
        name=name,
        finished_at=finished,
        succeeded=succeeded,
        failed=failed_cond is not None,
        message=messages.get(name),
        failure_reason=(failed_cond.message or failed_cond.reason) if failed_cond else None,
    )


class BackupKube:
    def __init__(self, api: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)

    def observe(self, names: Names) -> ObservedBackup:
        ns, name = names.namespace, backups.name_of(names)
        sa = _get(self.core.read_namespaced_service_account, name, ns)
        cj = _get(self.batch.read_namespaced_cron_job, name, ns)
        selector = backups.job_selector(names)
        messages: dict[str, str] = {}
        for pod in self.core.list_namespaced_pod(ns, label_selector=selector).items:
            job = ((pod.metadata.labels if pod.metadata else None) or {}).get("job-name")
            for cs in (pod.status.container_statuses or []) if pod.status else []:
                t = cs.state.terminated if cs.state else None
                if job and t is not None and t.message:
                    messages[job] = str(t.message)
        jobs = tuple(
            _job(j, messages)
            for j in self.batch.list_namespaced_job(ns, label_selector=selector).items
        )
        return ObservedBackup(
            service_account=None if sa is None else _obj(sa.metadata),
            cronjob=None if cj is None else _obj(cj.metadata),
            jobs=jobs,
        )

    def apply(self, write: Write, names: Names) -> None:
        ns = names.namespace
        api: Any = self.core if write.kind == "ServiceAccount" else self.batch
        suffix = "service_account" if write.kind == "ServiceAccount" else "cron_job"
        create = getattr(api, f"create_namespaced_{suffix}")
        patch = getattr(api, f"patch_namespaced_{suffix}")
        delete = getattr(api, f"delete_namespaced_{suffix}")
        try:
            if write.op == "create":
                create(ns, write.manifest)
            elif write.op == "patch":
                assert write.manifest is not None
                body = {k: v for k, v in write.manifest.items() if k not in ("apiVersion", "kind")}
                patch(write.name, ns, body, _content_type=MERGE)
            else:
                delete(write.name, ns, propagation_policy="Background")
        except ApiException as e:
            if (write.op, e.status) not in (("create", 409), ("delete", 404)):
                raise


def reconcile(
    bk: BackupKube,
    *,
    spec: Mapping[str, Any],
    quorum_spec: QuorumSpec,
    names: Names,
    owner: Owner,
    previous: Mapping[str, Any],
    generation: int,
    now: str,
    paused: bool,
    post: Callable[[str, str, str], None],
) -> BackupStatus | None:
    """One backup reconcile: parse spec.backup, converge the objects (not while paused),
    observe the Jobs, and compute status.backup + BackupFailing; posts the Events and sets the
    metrics. None when spec.backup is absent (and nothing of ours is left)."""
    error: str | None = None
    reason = "InvalidBackupSpec"
    try:
        backup = BackupSpec.from_spec(spec, names)
    except BackupSpecError as e:
        backup, error = None, str(e)
    try:
        observed = bk.observe(names)
        if not paused and error is None:
            for write in steps(backup, quorum_spec, names, owner, observed):
                bk.apply(write, names)
                verb = {"create": "created", "patch": "updated", "delete": "deleted"}[write.op]
                post("Normal", "BackupScheduled", f"{verb} {write.kind} {write.name}")
        if backup is not None and error is None:
            error, reason = foreign(names, owner, observed), "NotOwned"
    except ApiException as e:
        error = f"backup objects: Kubernetes API {e.status} {e.reason}: check the operator's RBAC"
        reason = "BackupObjectsFailed"
        observed = ObservedBackup()
    result = backup_status(backup, error, observed, previous, generation=generation, now=now)
    if result is None:
        backup_metrics.forget(names.namespace, names.name)
        return None
    conds = previous.get("conditions") or []
    if error is not None and backup is not None:
        c = condition(
            CONDITION, "True", reason, error, generation=generation, now=now, previous=conds
        )
        result = BackupStatus(result.fields, c, result.events)
    for kind, why, message in result.events:
        post(kind, why, message)
    old: Mapping[str, Any] = next((c for c in conds if c.get("type") == CONDITION), {})
    c = result.condition
    if (
        c["status"] == "True"
        and c["reason"] != "BackupJobFailed"
        and (old.get("status") != "True" or old.get("reason") != c["reason"])
    ):
        post("Warning", c["reason"], c["message"])
    backup_metrics.record(names.namespace, names.name, result.fields, c)
    return result

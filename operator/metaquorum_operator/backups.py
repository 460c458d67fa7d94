"""Scheduled backups of a MetadataQuorum (`spec.backup`, issue 31): the spec and the objects.

Role: parse `spec.backup` into a frozen `BackupSpec` (checking the cron schedule field by field,
as batch/v1 CronJob's standard 5-field parser reads it), and render, purely, what runs it: a
ServiceAccount `<name>-backup` with no token and no RoleBinding, and a CronJob `<name>-backup`
whose Job runs the node image with `metaquorum backup create --bootstrap-controller <the pods'
stable names> --to <URL>` then `metaquorum backup prune URL --keep N [--max-age D]`
(docs/backup.md; docs/operator.md, "Backups").

Invariants:
- least privilege: the Job's pod mounts no service account token (automountServiceAccountToken
  false on both the ServiceAccount and the pod) and its ServiceAccount is bound to no Role: it
  needs no Kubernetes API, only the controller listener and the destination;
- secrets never in args: S3 credentials come from `credentialsSecret`'s keys AWS_ACCESS_KEY_ID /
  AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN when present) as env; every value the script uses
  is env, the script itself is a constant;
- the Job's pods never carry the quorum's selector labels (so the Services, the PDB and the
  StatefulSet never select them) and are found by `job_labels`;
- with spec.tls.enabled the Job mounts the quorum's TLS Secret and connects with mutual TLS, host
  names verified against the pods' stable names (the client Service's name is not in the
  certificate, hence the pods' names as bootstrap, as the operator connects);
- `concurrencyPolicy: Forbid` (one backup at a time), one try per run (`backoffLimit: 0`), so
  each Job's outcome is one backup's outcome;
- the manifests carry the `metaquorum.dev/spec-hash` annotation of everything in them, as
  builders.py does, so a changed spec updates them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from metaquorum_operator import builders
from metaquorum_operator.model import TLS_DIR, Names, Owner, QuorumSpec
from metaquorum_operator.s3_env import s3_env
from metaquorum_operator.tls_client import CA, COMBINED

BACKUP_DIR = "/var/lib/metaquorum-backups"  # where a PVC destination is mounted
WORK_DIR = "/tmp"  # an emptyDir: `backup create` stages the files there (as large as a backup)
COMMAND_CONFIG = f"{WORK_DIR}/command.properties"
DEFAULT_KEEP = 7
ACTIVE_DEADLINE_S = 3600
HISTORY = 3  # successful and failed Jobs kept by the CronJob (status reads them)

# The Job's script: settings come from env (BOOTSTRAP, BACKUP_URL, BACKUP_KEEP,
# BACKUP_MAX_AGE, COMMAND_CONFIG_TEXT); the one line a failing command prints on stderr becomes
# the pod's termination message (FallbackToLogsOnError) unless `backup create` wrote its JSON
# summary there.
SCRIPT = f"""set -eu
if [ -n "${{COMMAND_CONFIG_TEXT:-}}" ]; then
  printf '%s\\n' "$COMMAND_CONFIG_TEXT" > {COMMAND_CONFIG}
  set -- --command-config {COMMAND_CONFIG}
fi
metaquorum backup create --bootstrap-controller "$BOOTSTRAP" --to "$BACKUP_URL" "$@"
if [ -n "${{BACKUP_MAX_AGE:-}}" ]; then
  exec metaquorum backup prune "$BACKUP_URL" --keep "$BACKUP_KEEP" --max-age "$BACKUP_MAX_AGE"
fi
exec metaquorum backup prune "$BACKUP_URL" --keep "$BACKUP_KEEP"
"""

_MACROS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
# (name, low, high, names for low.. in order)
_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)
_ITEM = re.compile(r"^(\*|\?|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:/([0-9]+))?$")


class BackupSpecError(ValueError):
    """spec.backup the operator cannot run; the message is one line naming the fix."""


def _value(text: str, low: int, high: int, names: Sequence[str], what: str) -> int:
    if text.isdigit():
        v = int(text)
    elif text.upper() in names:
        v = list(names).index(text.upper()) + low
    else:
        raise BackupSpecError(f"{what}: {text!r} is not a number")
    if not low <= v <= high:
        raise BackupSpecError(f"{what}: {v} is outside {low}-{high}")
    return v


def check_schedule(schedule: str) -> None:
    """Refuse what a CronJob's standard parser (robfig/cron, 5 fields) refuses, with the field
    named: `*/5 * * * *`, `0 3 * * MON-FRI`, `@daily` pass; `61 * * * *` does not."""
    text = schedule.strip()
    if text.startswith("@"):
        if text.lower() not in _MACROS:
            raise BackupSpecError(
                f"spec.backup.schedule {schedule!r}: unknown macro: use one of "
                + ", ".join(sorted(_MACROS))
            )
        return
    parts = text.split()
    if len(parts) != 5:
        raise BackupSpecError(
            f"spec.backup.schedule {schedule!r}: give 5 fields (minute hour day-of-month month "
            "day-of-week), e.g. '0 3 * * *'"
        )
    for part, (name, low, high, names) in zip(parts, _FIELDS, strict=True):
        what = f"spec.backup.schedule {schedule!r}, {name}"
        for item in part.split(","):
            m = _ITEM.match(item)
            if m is None:
                raise BackupSpecError(f"{what}: {item!r} is not a cron item (N, N-M, */S, N-M/S)")
            span, step = m.group(1), m.group(2)
            if step is not None and int(step) == 0:
                raise BackupSpecError(f"{what}: step 0 in {item!r}")
            if span in ("*", "?"):
                continue
            first, _, last = span.partition("-")
            a = _value(first, low, high, names, what)
            if last and _value(last, low, high, names, what) < a:
                raise BackupSpecError(f"{what}: range {span!r} runs backwards")


@dataclass(frozen=True, slots=True)
class S3Target:
    bucket: str
    prefix: str
    credentials_secret: str
    endpoint: str | None = None
    region: str | None = None


@dataclass(frozen=True, slots=True)
class BackupSpec:
    """spec.backup: when, how many to keep, and where (S3 or a PVC, exactly one)."""

    schedule: str
    keep: int = DEFAULT_KEEP
    max_age: str | None = None
    s3: S3Target | None = None
    pvc_claim: str | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], names: Names) -> BackupSpec | None:
        """None without spec.backup; BackupSpecError (one line) for one the CRD let through
        but a CronJob would refuse or the operator cannot run."""
        raw = spec.get("backup")
        if not raw:
            return None
        schedule = str(raw.get("schedule") or "")
        check_schedule(schedule)
        retention = raw.get("retention") or {}
        keep = int(retention.get("count", DEFAULT_KEEP))
        if keep < 1:
            raise BackupSpecError("spec.backup.retention.count must be at least 1")
        max_age = retention.get("maxAge") or None
        if max_age is not None and not re.fullmatch(r"[1-9][0-9]*[smhdw]", str(max_age)):
            raise BackupSpecError(
                f"spec.backup.retention.maxAge {max_age!r}: a number and a unit s, m, h, d or w"
            )
        s3, pvc = raw.get("s3"), raw.get("pvc")
        if bool(s3) == bool(pvc):
            raise BackupSpecError("spec.backup: give exactly one destination, s3 or pvc")
        target = None
        if s3:
            prefix = str(s3.get("prefix") or f"{names.namespace}/{names.name}").strip("/")
            target = S3Target(
                bucket=str(s3["bucket"]),
                prefix=prefix,
                credentials_secret=str(s3["credentialsSecret"]),
                endpoint=s3.get("endpoint") or None,
                region=s3.get("region") or None,
            )
        return cls(
            schedule=schedule.strip(),
            keep=keep,
            max_age=str(max_age) if max_age else None,
            s3=target,
            pvc_claim=str(pvc["claimName"]) if pvc else None,
        )

    @property
    def url(self) -> str:
        if self.s3 is not None:
            return f"s3://{self.s3.bucket}/{self.s3.prefix}".rstrip("/")
        return BACKUP_DIR


def name_of(names: Names) -> str:
    """The CronJob's and the ServiceAccount's name."""
    return f"{names.name}-backup"


def job_labels(names: Names) -> dict[str, str]:
    """Labels of the CronJob, its Jobs and their pods: not the quorum's selector labels."""
    return {
        "app.kubernetes.io/name": "metaquorum-backup",
        "app.kubernetes.io/instance": names.name,
        "app.kubernetes.io/component": "backup",
        "app.kubernetes.io/managed-by": "metaquorum-operator",
    }


def job_selector(names: Names) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(job_labels(names).items()))


def _meta(name: str, names: Names, owner: Owner) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": names.namespace,
        "labels": job_labels(names),
        "ownerReferences": [owner.reference()],
    }


def service_account(names: Names, owner: Owner) -> dict[str, Any]:
    obj = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(name_of(names), names, owner),
        "automountServiceAccountToken": False,
    }
    return builders._stamp(obj, {"automountServiceAccountToken": False})


def command_config(spec: QuorumSpec) -> str:
    """The client TLS settings of `--command-config` (mutual TLS with the pods' certificate)."""
    algorithm = spec.config.get("ssl.endpoint.identification.algorithm", "https")
    return "\n".join(
        [
            "security.protocol=SSL",
            "ssl.keystore.type=PEM",
            f"ssl.keystore.location={TLS_DIR}/{COMBINED}",
            "ssl.truststore.type=PEM",
            f"ssl.truststore.location={TLS_DIR}/{CA}",
            f"ssl.endpoint.identification.algorithm={algorithm}",
        ]
    )


def _env(backup: BackupSpec, spec: QuorumSpec, names: Names) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "BOOTSTRAP", "value": builders.bootstrap_servers(spec, names)},
        {"name": "BACKUP_URL", "value": backup.url},
        {"name": "BACKUP_KEEP", "value": str(backup.keep)},
        {"name": "BACKUP_MAX_AGE", "value": backup.max_age or ""},
        {"name": "COMMAND_CONFIG_TEXT", "value": command_config(spec) if spec.tls_enabled else ""},
        {"name": "TMPDIR", "value": WORK_DIR},
    ]
    s3 = backup.s3
    if s3 is not None:
        env += s3_env(s3.credentials_secret, s3.endpoint, s3.region)
    return env


def cronjob(backup: BackupSpec, spec: QuorumSpec, names: Names, owner: Owner) -> dict[str, Any]:
    mounts: list[dict[str, Any]] = [{"name": "work", "mountPath": WORK_DIR}]
    volumes: list[dict[str, Any]] = [{"name": "work", "emptyDir": {}}]
    if spec.tls_enabled:
        mounts.append({"name": "tls", "mountPath": TLS_DIR, "readOnly": True})
        volumes.append({"name": "tls", "secret": {"secretName": spec.tls_secret_name}})
    if backup.pvc_claim:
        mounts.append({"name": "backups", "mountPath": BACKUP_DIR})
        volumes.append(
            {"name": "backups", "persistentVolumeClaim": {"claimName": backup.pvc_claim}}
        )
    container: dict[str, Any] = {
        "name": "backup",
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["sh", "-c", SCRIPT, "metaquorum-backup"],
        "env": _env(backup, spec, names),
        "volumeMounts": mounts,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    pod_spec = {
        "serviceAccountName": name_of(names),
        "automountServiceAccountToken": False,
        "restartPolicy": "Never",
        "enableServiceLinks": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000},
        "containers": [container],
        "volumes": volumes,
    }
    cj_spec = {
        "schedule": backup.schedule,
        "concurrencyPolicy": "Forbid",
        "successfulJobsHistoryLimit": HISTORY,
        "failedJobsHistoryLimit": HISTORY,
        "jobTemplate": {
            "metadata": {"labels": job_labels(names)},
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": ACTIVE_DEADLINE_S,
                "template": {"metadata": {"labels": job_labels(names)}, "spec": pod_spec},
            },
        },
    }
    obj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": _meta(name_of(names), names, owner),
        "spec": cj_spec,
    }
    return builders._stamp(obj, cj_spec)

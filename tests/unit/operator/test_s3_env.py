"""s3_env: the S3 client env shared by the backup Job and the restoring init container."""

from __future__ import annotations

from metaquorum_operator import backups
from metaquorum_operator.model import Names, Owner, QuorumSpec
from metaquorum_operator.restore_from import RestoreFrom
from metaquorum_operator.s3_env import s3_env


def ref(key: str, **extra: object) -> dict[str, object]:
    return {"name": key, "valueFrom": {"secretKeyRef": {"name": "creds", "key": key, **extra}}}


def test_every_entry_in_order_credentials_by_reference_only() -> None:
    assert s3_env("creds", "http://s3:8333", "eu-west-1") == [
        ref("AWS_ACCESS_KEY_ID"),
        ref("AWS_SECRET_ACCESS_KEY"),
        ref("AWS_SESSION_TOKEN", optional=True),
        {"name": "AWS_ENDPOINT_URL", "value": "http://s3:8333"},
        {"name": "AWS_REGION", "value": "eu-west-1"},
    ]


def test_only_what_is_given() -> None:
    assert s3_env(None, None, None) == []
    assert s3_env(None, "http://s3:8333", "") == [
        {"name": "AWS_ENDPOINT_URL", "value": "http://s3:8333"}
    ]
    assert [e["name"] for e in s3_env("creds", None, None)] == [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ]


def test_backup_job_and_restore_container_carry_the_same_s3_env() -> None:
    s3 = {"credentialsSecret": "creds", "endpoint": "http://s3:8333", "region": "eu-west-1"}
    names = Names("q", "ns")
    backup = backups.BackupSpec.from_spec(
        {"backup": {"schedule": "@daily", "s3": {"bucket": "b", **s3}}}, names
    )
    assert backup is not None
    cj = backups.cronjob(backup, QuorumSpec(), names, Owner("q", "uid-1"))
    job_env = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    restore = RestoreFrom.from_spec({"backup": "s3://b/q/1", "s3": s3})
    assert restore is not None
    want = s3_env("creds", "http://s3:8333", "eu-west-1")
    assert [e for e in job_env if e["name"].startswith("AWS_")] == want
    assert restore.env()[1:] == want

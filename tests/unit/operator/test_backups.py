"""spec.backup: parsing and the cron check, and the CronJob / ServiceAccount rendered for it
(least privilege, credentials only through Secret refs, TLS, PVC, labels apart from the
quorum's selector)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from metaquorum_operator import backups, builders
from metaquorum_operator.backups import BackupSpec, BackupSpecError, check_schedule
from metaquorum_operator.model import Names, Owner, QuorumSpec

NAMES = Names("q", "ns")
OWNER = Owner("q", "uid-1")
S3 = {"bucket": "bk", "credentialsSecret": "s3-creds", "endpoint": "http://s3:8333"}


def _spec(**backup: Any) -> BackupSpec:
    found = BackupSpec.from_spec({"backup": {"schedule": "*/5 * * * *", **backup}}, NAMES)
    assert found is not None
    return found


@pytest.mark.parametrize(
    "good",
    [
        "*/5 * * * *",
        "0 3 * * *",
        "0 3 * * MON-FRI",
        "15,45 1-5/2 1 JAN,jul 0",
        "@daily",
        "? * * * 7",
    ],
)
def test_schedules_a_cronjob_accepts(good: str) -> None:
    check_schedule(good)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("61 * * * *", "minute: 61 is outside 0-59"),
        ("* 24 * * *", "hour: 24 is outside 0-23"),
        ("* * 0 * *", "day of month: 0 is outside 1-31"),
        ("* * * FOO *", "month: 'FOO' is not a number"),
        ("* * * * 8", "day of week: 8 is outside 0-7"),
        ("*/0 * * * *", "step 0"),
        ("5-1 * * * *", "runs backwards"),
        ("* * * *", "give 5 fields"),
        ("@sometimes", "unknown macro"),
        ("*5 * * * *", "not a cron item"),
    ],
)
def test_schedules_refused_with_the_field_named(bad: str, says: str) -> None:
    with pytest.raises(BackupSpecError, match=says.replace("(", r"\(")) as e:
        check_schedule(bad)
    assert "\n" not in str(e.value)


def test_parse_defaults_and_destinations() -> None:
    assert BackupSpec.from_spec({}, NAMES) is None
    b = _spec(s3=S3)
    assert (b.keep, b.max_age, b.url) == (backups.DEFAULT_KEEP, None, "s3://bk/ns/q")
    b = _spec(s3={**S3, "prefix": "/x/y/"}, retention={"count": 2, "maxAge": "30d"})
    assert (b.keep, b.max_age, b.url) == (2, "30d", "s3://bk/x/y")
    b = _spec(pvc={"claimName": "backups"})
    assert (b.pvc_claim, b.url) == ("backups", backups.BACKUP_DIR)
    with pytest.raises(BackupSpecError, match="exactly one destination"):
        _spec(s3=S3, pvc={"claimName": "c"})
    with pytest.raises(BackupSpecError, match="exactly one destination"):
        _spec()
    with pytest.raises(BackupSpecError, match="maxAge"):
        _spec(s3=S3, retention={"maxAge": "1 month"})
    with pytest.raises(BackupSpecError, match="at least 1"):
        _spec(s3=S3, retention={"count": 0})


def _pod(cj: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return pod


def test_cronjob_runs_create_then_prune_with_least_privilege() -> None:
    spec = QuorumSpec(replicas=3)
    b = _spec(s3={**S3, "region": "eu-1"}, retention={"count": 4, "maxAge": "12h"})
    cj = backups.cronjob(b, spec, NAMES, OWNER)
    sa = backups.service_account(NAMES, OWNER)
    assert (cj["kind"], cj["metadata"]["name"], sa["metadata"]["name"]) == (
        "CronJob",
        "q-backup",
        "q-backup",
    )
    for obj in (cj, sa):
        (ref,) = obj["metadata"]["ownerReferences"]
        assert ref["uid"] == "uid-1"
        assert builders.SPEC_HASH in obj["metadata"]["annotations"]
    assert sa["automountServiceAccountToken"] is False
    assert cj["spec"]["schedule"] == "*/5 * * * *"
    assert cj["spec"]["concurrencyPolicy"] == "Forbid"
    assert cj["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 0
    pod = _pod(cj)
    assert pod["serviceAccountName"] == "q-backup"
    assert pod["automountServiceAccountToken"] is False
    assert pod["restartPolicy"] == "Never"
    (c,) = pod["containers"]
    assert c["image"] == spec.image
    assert c["command"][:2] == ["sh", "-c"]
    assert "metaquorum backup create" in c["command"][2]
    assert "metaquorum backup prune" in c["command"][2]
    assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"
    env = {e["name"]: e for e in c["env"]}
    assert env["BOOTSTRAP"]["value"] == builders.bootstrap_servers(spec, NAMES)
    assert env["BOOTSTRAP"]["value"].startswith("q-0.q-headless.ns.svc.cluster.local:9093,")
    assert env["BACKUP_URL"]["value"] == "s3://bk/ns/q"
    assert (env["BACKUP_KEEP"]["value"], env["BACKUP_MAX_AGE"]["value"]) == ("4", "12h")
    assert (env["AWS_ENDPOINT_URL"]["value"], env["AWS_REGION"]["value"]) == (
        "http://s3:8333",
        "eu-1",
    )
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert env[key] == {
            "name": key,
            "valueFrom": {"secretKeyRef": {"name": "s3-creds", "key": key}},
        }
    assert env["AWS_SESSION_TOKEN"]["valueFrom"]["secretKeyRef"]["optional"] is True
    assert env["COMMAND_CONFIG_TEXT"]["value"] == ""  # no TLS
    # nothing secret in args or command: only refs
    assert "s3-creds" not in json.dumps(c["command"])
    assert "args" not in c


def test_job_pods_are_not_selected_by_the_quorum() -> None:
    cj = backups.cronjob(_spec(s3=S3), QuorumSpec(), NAMES, OWNER)
    labels = cj["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    selector = NAMES.selector_labels()
    assert not all(labels.get(k) == v for k, v in selector.items())
    assert backups.job_selector(NAMES) == ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def test_tls_mounts_the_secret_and_writes_a_command_config() -> None:
    spec = QuorumSpec(
        tls_enabled=True,
        tls_secret_name="q-tls",
        config={"ssl.endpoint.identification.algorithm": ""},
    )
    cj = backups.cronjob(_spec(s3=S3), spec, NAMES, OWNER)
    pod = _pod(cj)
    assert {"name": "tls", "secret": {"secretName": "q-tls"}} in pod["volumes"]
    (c,) = pod["containers"]
    assert any(m["name"] == "tls" and m["readOnly"] for m in c["volumeMounts"])
    text = {e["name"]: e.get("value") for e in c["env"]}["COMMAND_CONFIG_TEXT"]
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["security.protocol"] == "SSL"
    assert props["ssl.keystore.location"].endswith("/tls-combined.pem")
    assert props["ssl.truststore.location"].endswith("/ca.crt")
    assert props["ssl.endpoint.identification.algorithm"] == ""
    assert "--command-config" in c["command"][2]


def test_pvc_destination_is_mounted_where_the_url_points() -> None:
    cj = backups.cronjob(_spec(pvc={"claimName": "bk"}), QuorumSpec(), NAMES, OWNER)
    pod = _pod(cj)
    assert {"name": "backups", "persistentVolumeClaim": {"claimName": "bk"}} in pod["volumes"]
    (c,) = pod["containers"]
    assert {"name": "backups", "mountPath": backups.BACKUP_DIR} in c["volumeMounts"]
    env = {e["name"]: e for e in c["env"]}
    assert env["BACKUP_URL"]["value"] == backups.BACKUP_DIR
    assert not any(k.startswith("AWS_") for k in env)


def test_a_changed_spec_changes_the_hash() -> None:
    b = _spec(s3=S3)
    one = backups.cronjob(b, QuorumSpec(), NAMES, OWNER)
    two = backups.cronjob(dataclasses.replace(b, keep=9), QuorumSpec(), NAMES, OWNER)
    assert one == backups.cronjob(b, QuorumSpec(), NAMES, OWNER)
    h = builders.SPEC_HASH
    assert one["metadata"]["annotations"][h] != two["metadata"]["annotations"][h]


def _run_script(tmp_path: Any, env: dict[str, str], fail_create: bool = False) -> list[str]:
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls"
    fake = bin_dir / "metaquorum"
    code = "exit 1" if fail_create else "exit 0"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n[ "$2" = create ] && {{ {code}; }}\nexit 0\n')
    fake.chmod(0o755)
    script = backups.SCRIPT.replace(backups.COMMAND_CONFIG, str(tmp_path / "cc.properties"))
    full = {"PATH": f"{bin_dir}:{os.environ['PATH']}", **env}
    subprocess.run(["sh", "-c", script, "metaquorum-backup"], env=full, check=False)
    return log.read_text().splitlines() if log.exists() else []


def test_the_script_runs_create_then_prune(tmp_path: Any) -> None:
    env = {"BOOTSTRAP": "a:1,b:1", "BACKUP_URL": "s3://b/p", "BACKUP_KEEP": "3"}
    assert _run_script(tmp_path, {**env, "BACKUP_MAX_AGE": "", "COMMAND_CONFIG_TEXT": ""}) == [
        "backup create --bootstrap-controller a:1,b:1 --to s3://b/p",
        "backup prune s3://b/p --keep 3",
    ]
    (tmp_path / "calls").unlink()
    calls = _run_script(
        tmp_path, {**env, "BACKUP_MAX_AGE": "2d", "COMMAND_CONFIG_TEXT": "security.protocol=SSL"}
    )
    cc = tmp_path / "cc.properties"
    assert calls == [
        f"backup create --bootstrap-controller a:1,b:1 --to s3://b/p --command-config {cc}",
        "backup prune s3://b/p --keep 3 --max-age 2d",
    ]
    assert cc.read_text() == "security.protocol=SSL\n"
    (tmp_path / "calls").unlink()
    # a failed backup prunes nothing (the Job fails with create's line)
    assert _run_script(tmp_path, {**env}, fail_create=True) == [
        "backup create --bootstrap-controller a:1,b:1 --to s3://b/p"
    ]

"""Issue 31 on a real apiserver: the CRD's spec.backup / spec.restoreFrom rules, and the
objects the operator renders for them (backup ServiceAccount and CronJob, with and without TLS,
S3 and PVC; the StatefulSet with a restoreFrom PVC), accepted by kube-apiserver (dry run).
No Job runs here: that needs the real-kubelet target (docs/operator.md says what remains)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import Cluster
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from metaquorum_operator import backups, builders
from metaquorum_operator.model import Names, Owner, QuorumSpec

pytestmark = pytest.mark.e2e

CID = "IOoQl4zTThqhIBRuWE4s0A"
S3 = {"bucket": "bkt", "credentialsSecret": "creds", "endpoint": "http://s3:8333"}
CASES: dict[str, tuple[dict[str, Any], str | None]] = {
    "ok-s3": ({"backup": {"schedule": "*/1 * * * *", "retention": {"count": 3}, "s3": S3}}, None),
    "ok-pvc": ({"backup": {"schedule": "@daily", "pvc": {"claimName": "bk"}}}, None),
    "bad-shape": (
        {"backup": {"schedule": "every minute", "pvc": {"claimName": "bk"}}},
        "must be 5 cron fields",
    ),
    "two-dest": (
        {"backup": {"schedule": "0 * * * *", "pvc": {"claimName": "bk"}, "s3": S3}},
        "exactly one destination",
    ),
    "no-dest": ({"backup": {"schedule": "0 * * * *"}}, "exactly one destination"),
    "bad-age": (
        {
            "backup": {
                "schedule": "0 * * * *",
                "pvc": {"claimName": "b"},
                "retention": {"maxAge": "1y"},
            }
        },
        "maxAge",
    ),
    "restore-ok": ({"clusterId": CID, "restoreFrom": {"backup": "s3://b/p/n", "s3": {}}}, None),
    "restore-no-cid": ({"restoreFrom": {"backup": "s3://b/p/n"}}, "needs spec.clusterId"),
}


def _mq(name: str, ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "metaquorum.dev/v1alpha1",
        "kind": "MetadataQuorum",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_crd_backup_and_restore_rules(
    cluster: Cluster, operator: str, namespace: str, case: str
) -> None:
    spec, refused = CASES[case]
    body = _mq(case, namespace, spec)
    args = ("metaquorum.dev", "v1alpha1", namespace, "metadataquorums", body)
    if refused is None:
        cluster.custom.create_namespaced_custom_object(*args, dry_run="All")
        return
    with pytest.raises(ApiException) as e:
        cluster.custom.create_namespaced_custom_object(*args, dry_run="All")
    assert e.value.status == 422
    assert refused in json.loads(e.value.body)["message"]


def _plain(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(obj))
    out["metadata"].pop("ownerReferences")  # no real owner in a dry run
    return out


@pytest.mark.parametrize("tls", [False, True])
def test_rendered_backup_objects_are_accepted(cluster: Cluster, namespace: str, tls: bool) -> None:
    names, owner = Names("q", namespace), Owner("q", "00000000-0000-0000-0000-000000000001")
    spec = QuorumSpec(tls_enabled=tls, tls_secret_name="q-tls" if tls else None)
    batch = client.BatchV1Api(cluster.core.api_client)
    for raw in (CASES["ok-s3"][0], CASES["ok-pvc"][0]):
        b = backups.BackupSpec.from_spec(raw, names)
        assert b is not None
        sa = _plain(backups.service_account(names, owner))
        cj = _plain(backups.cronjob(b, spec, names, owner))
        cluster.core.create_namespaced_service_account(namespace, sa, dry_run="All")
        made = batch.create_namespaced_cron_job(namespace, cj, dry_run="All")
        pod = made.spec.job_template.spec.template.spec
        assert pod.automount_service_account_token is False
        assert pod.service_account_name == "q-backup"
    restore = QuorumSpec.from_spec(
        {"clusterId": CID, "restoreFrom": {"backup": "n", "pvc": {"claimName": "old"}}}
    )
    sts = _plain(builders.statefulset(restore, names, owner, 1))
    cluster.apps.create_namespaced_stateful_set(namespace, sts, dry_run="All")

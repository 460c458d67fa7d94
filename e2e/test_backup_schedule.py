"""Issue 31 end to end: scheduled backups to a real S3 server, then a new quorum restored from one.

- The S3 server: SeaweedFS's `weed` (tests/integration/s3_server.py, built and cached by
  scripts/build-seaweedfs.sh) as a process of the test, bound where the pods reach it: on the
  real-kubelet target the bridge's gateway (the node's address, 10.244.0.1, inside the tier's
  network namespace, where CoreDNS runs the same way); on the stand-in loopback (its pods are
  host processes). kind is skipped (its pods cannot reach a process of the test).
- `test_scheduled_backups_land_verify_and_are_pruned`: the sample quorum with `spec.backup`
  every minute, retention count 1, to the bucket through a credentials Secret, while a client
  appends `key=value` records (the Ledger, kv). Two backups taken by the operator's CronJob are
  seen in the bucket; `metaquorum backup verify` passes on each while it is there; the oldest
  is pruned (the bucket lists exactly the newest one only); status.backup.lastSuccessful, the
  BackupFailing condition, the BackupCompleted Events and the operator's backup metrics report
  the newest.
- `test_restore_from_into_a_new_quorum`: the ledger stopped, the MetadataQuorum deleted (its
  PVCs too), a new one applied with the old cluster id and `spec.restoreFrom` naming the newest
  backup: it forms 3 voters, and every pod's key-value state is exactly the records the client
  had acknowledged below the backup's end offset (key count and the state digest), none after.

The two share one scenario (module fixture: its own namespace, the S3 server, the quorum);
the restore test takes the backups itself when run alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kv_state
import pytest
import yaml
from harness import OPERATOR_NS, TIMINGS, Cluster, wait_for
from kubernetes import client
from metaquorum_operator import backups
from metaquorum_operator.model import Names
from quorums import GROUP, PLURAL, SAMPLE, VERSION, cond, hosts, settled, use_pod_names

pytestmark = [pytest.mark.e2e, pytest.mark.e2e_long]  # make e2e-long

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tests.integration.ledger import Ledger  # noqa: E402
from tests.integration.s3_server import ADMIN, BUCKET, S3Server  # noqa: E402

NS = "backup-schedule"
NAMES = Names("quorum", NS)
SECRET = "s3-creds"
PREFIX = f"{NS}/quorum"
KEEP = 1
SEEN = 2  # backups to see land: one more than are kept, so one is pruned (the schedule is per
# minute: each further backup costs a minute of the tier)


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "metaquorum.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def body(s3: S3Server, extra: dict[str, Any]) -> dict[str, Any]:
    obj = yaml.safe_load(SAMPLE.read_text())
    obj["metadata"]["namespace"] = NS
    obj["spec"].update({"image": "metaquorum/node:e2e", "imagePullPolicy": "Never", **extra})
    return dict(obj)


def s3_ref(s3: S3Server) -> dict[str, str]:
    return {"credentialsSecret": SECRET, "endpoint": s3.endpoint, "region": "us-east-1"}


@dataclass
class Scenario:
    cluster: Cluster
    s3: S3Server
    ledger: Ledger
    seen: dict[str, str] = field(default_factory=dict)  # backup name -> verify's line
    listed: list[tuple[str, int, int]] = field(default_factory=list)  # (name, end, size)
    cluster_id: str = ""

    @property
    def url(self) -> str:
        return f"s3://{BUCKET}/{PREFIX}"

    def list_backups(self) -> list[tuple[str, int, int]]:
        r = cli("backup", "list", self.url, env=self.s3.env())
        assert r.returncode == 0, r.stderr
        rows = []
        for line in r.stdout.splitlines():
            name, cid, end, size = line.split("\t")
            assert cid == f"cluster {self.cluster_id}", line
            rows.append((name, int(end.split()[-1]), int(size.split()[0])))
        return rows

    def wait_backups(self) -> None:
        """Until SEEN backups were seen in the bucket (each verified while there) and the bucket
        lists exactly the newest KEEP of them. Idempotent."""
        if len(self.seen) >= SEEN and self.listed:
            return
        t0 = time.monotonic()

        def done() -> bool:
            rows = self.list_backups()
            for name, _, _ in rows:
                if name not in self.seen:
                    r = cli("backup", "verify", f"{self.url}/{name}", env=self.s3.env())
                    assert r.returncode == 0 and " ok: " in r.stdout, (name, r.stdout, r.stderr)
                    self.seen[name] = r.stdout.strip()
            newest = sorted(self.seen)[-KEEP:]
            if len(self.seen) >= SEEN and [n for n, _, _ in rows] == newest:
                self.listed = rows
                return True
            return False

        wait_for(done, 330, f"{SEEN} scheduled backups, the bucket holding the newest {KEEP}", 2)
        took = time.monotonic() - t0
        TIMINGS[f"backup: quorum ready -> {SEEN} backups seen, the oldest pruned (s)"] = took


@pytest.fixture(scope="module")
def scenario(
    cluster: Cluster, operator: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    if cluster.kind == "local":
        from kubeletcluster import GATEWAY

        host = GATEWAY
    elif cluster.kind == "stand-in":
        host = "127.0.0.1"
    else:
        pytest.skip("the S3 server runs as a process of the test: kind's pods cannot reach it")
    use_pod_names(cluster)
    s3 = S3Server(tmp_path_factory.mktemp("s3"), host=host)
    t0 = time.monotonic()
    s3.start()
    TIMINGS["backup: SeaweedFS S3 up (s)"] = time.monotonic() - t0
    cluster.core.create_namespace({"metadata": {"name": NS}})
    ledger = Ledger(_endpoints, kv=True)
    try:
        cluster.core.create_namespaced_secret(
            NS,
            {
                "metadata": {"name": SECRET},
                "stringData": {"AWS_ACCESS_KEY_ID": ADMIN[0], "AWS_SECRET_ACCESS_KEY": ADMIN[1]},
            },
        )
        backup = {
            "schedule": "* * * * *",
            "retention": {"count": KEEP},
            "s3": {"bucket": BUCKET, "prefix": PREFIX, **s3_ref(s3)},
        }
        t0 = time.monotonic()
        cluster.kubectl("apply", "-f", "-", input=json.dumps(body(s3, {"backup": backup})))
        obj = wait_for(lambda: settled(cluster, NS, [0, 1, 2]), 240, "3 voters, Running")
        TIMINGS["backup: apply -> 3 voters (s)"] = time.monotonic() - t0
        sc = Scenario(cluster, s3, ledger, cluster_id=obj["spec"]["clusterId"])
        ledger.start()
        ledger.wait_acked(50, 60)
        yield sc
    finally:
        ledger.stop()
        cluster.core.delete_namespace(NS)
        s3.stop()


def _endpoints() -> list[Any]:
    from metaquorum.net.endpoint import Endpoint

    return [Endpoint(h, p) for h, p in hosts(NS, 3)]


def _mq(cluster: Cluster) -> dict[str, Any]:
    return dict(cluster.custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "quorum"))


def _operator_metrics(cluster: Cluster) -> dict[str, float]:
    pods = cluster.core.list_namespaced_pod(
        OPERATOR_NS, label_selector="app.kubernetes.io/name=metaquorum-operator"
    ).items
    ip = next(p.status.pod_ip for p in pods if p.status.pod_ip)
    with urllib.request.urlopen(f"http://{ip}:9090/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    labels = f'{{name="quorum",namespace="{NS}"}}'
    for line in text.splitlines():
        if line.startswith("metaquorum_operator_backup_") and labels in line:
            out[line.split("{")[0]] = float(line.split()[-1])
    return out


def test_scheduled_backups_land_verify_and_are_pruned(scenario: Scenario) -> None:
    sc, cluster = scenario, scenario.cluster
    acked_before = len(sc.ledger.acked)
    sc.wait_backups()
    names = sorted(sc.seen)
    print(f"\nbackups seen: {names}; listed now: {sc.listed}")
    assert len(sc.ledger.acked) > acked_before + 100, "the client kept appending meanwhile"
    # the oldest are gone from the bucket, manifest and files alike
    s3c: Any = sc.s3.client()
    for gone in names[:-KEEP]:
        left = s3c.list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/{gone}/").get("KeyCount", 0)
        assert left == 0, f"pruned backup {gone} still has {left} objects"
    # verify's line: "backup NAME ok: offsets [START, END), ..."
    ends = [int(sc.seen[n].split("offsets [")[1].split(")")[0].split(", ")[1]) for n in names]
    assert ends == sorted(ends) and ends[0] < ends[-1], sc.seen
    newest, end, size = sc.listed[-1]

    def reported() -> Any:
        st = (_mq(cluster).get("status") or {}).get("backup") or {}
        last = st.get("lastSuccessful") or {}
        return last.get("name") == newest and last

    last = wait_for(reported, 60, f"status.backup.lastSuccessful naming {newest}")
    assert last["endOffset"] == end and last["sizeBytes"] == size, last
    assert last["url"].rstrip("/").endswith(f"{PREFIX}/{newest}"), last
    failing = cond(_mq(cluster), "BackupFailing")
    assert failing["status"] == "False" and failing["reason"] == "BackupSucceeded", failing
    sel = "involvedObject.kind=MetadataQuorum,reason=BackupCompleted"
    completed = cluster.core.list_namespaced_event(NS, field_selector=sel).items
    assert len(completed) >= SEEN, [e.message for e in completed]
    assert any(newest in (e.message or "") for e in completed), [e.message for e in completed]
    m = wait_for(
        lambda: (
            (m := _operator_metrics(cluster)).get("metaquorum_operator_backup_last_size_bytes")
            == size
            and m
        ),
        30,
        "the operator's backup metrics showing the newest backup",
    )
    assert m["metaquorum_operator_backup_failing"] == 0
    assert m["metaquorum_operator_backup_last_success_timestamp_seconds"] > time.time() - 180
    assert m["metaquorum_operator_backup_last_duration_seconds"] > 0


def test_restore_from_into_a_new_quorum(scenario: Scenario) -> None:
    sc, cluster = scenario, scenario.cluster
    sc.wait_backups()
    # no backup may run (and prune the one chosen) from here on: spec.backup removed, the
    # operator deletes the CronJob, its Jobs' pods go with it
    patch = json.dumps({"spec": {"backup": None}})
    cluster.kubectl("patch", "metadataquorum", "quorum", "-n", NS, "--type=merge", "-p", patch)
    batch = client.BatchV1Api(cluster.core.api_client)

    def no_backup_jobs() -> bool:
        if batch.list_namespaced_cron_job(NS).items:
            return False
        pods = cluster.core.list_namespaced_pod(NS, label_selector=backups.job_selector(NAMES))
        return not pods.items

    wait_for(no_backup_jobs, 120, "the backup CronJob and its Jobs' pods gone")
    sc.ledger.stop()
    name, end, _ = sc.list_backups()[-1]
    acked = dict(sc.ledger.acked)
    before = {v: o for v, o in acked.items() if o < end}
    after = {v: o for v, o in acked.items() if o >= end}
    print(f"\nrestoring {name} (end offset {end}): {len(before)} acked below, {len(after)} after")
    assert len(before) >= 100 and after, "the backup was taken while the client appended"
    TIMINGS["restore: acked records below the backup's end offset (count)"] = len(before)
    TIMINGS["restore: acked records after it, to be absent (count)"] = len(after)

    cluster.kubectl("delete", "metadataquorum", "quorum", "-n", NS, "--wait=true")

    def gone() -> bool:
        pods = cluster.core.list_namespaced_pod(
            NS, label_selector="app.kubernetes.io/name=metaquorum,app.kubernetes.io/instance=quorum"
        )
        pvcs = cluster.core.list_namespaced_persistent_volume_claim(NS).items
        return not pods.items and not pvcs

    wait_for(gone, 120, "the quorum's pods and PVCs deleted")
    restore = {
        "clusterId": sc.cluster_id,
        "restoreFrom": {"backup": f"{sc.url}/{name}", "s3": s3_ref(sc.s3)},
    }
    t0 = time.monotonic()
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body(sc.s3, restore)))
    obj = wait_for(lambda: settled(cluster, NS, [0, 1, 2]), 240, "the restored quorum: 3 voters")
    TIMINGS["restoreFrom: apply -> 3 voters (s)"] = time.monotonic() - t0
    assert obj["status"]["clusterId"] == sc.cluster_id

    # the map is exactly the acknowledged records below the end offset; an append whose answer
    # was lost (unknown) may be in it or not
    ok = kv_state.allowed(before, sc.ledger.unknown)

    def state(i: int) -> Any:
        ip = cluster.core.read_namespaced_pod(f"quorum-{i}", NS).status.pod_ip
        sm = kv_state.node_state(ip)
        return sm if sm["applied_offset"] >= end else None

    for i in range(3):
        sm = wait_for(lambda i=i: state(i), 60, f"quorum-{i} applying the restored log")
        assert (sm["keys"], sm["digest"]) in ok, (
            f"quorum-{i}: {sm['keys']} keys, digest {sm['digest']}; expected {len(before)} keys"
        )

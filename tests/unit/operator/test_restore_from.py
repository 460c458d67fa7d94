"""spec.restoreFrom: parsing, the init container's env and volumes, and the format script run
with sh and the real `metaquorum backup restore` on a real (local) backup: pod 0 of a new
quorum is restored from it; another cluster's backup, or a missing one, is refused with exit 3
and one line (VolumeRefused) and nothing is left; pods 1.. and a formed quorum never restore."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from metaquorum_operator import builders
from metaquorum_operator.model import CONFIG_DIR, CONFIG_FILE, Names, Owner, QuorumSpec
from metaquorum_operator.restore_from import RESTORE_DIR, RestoreFrom

from tests.unit.backup.helpers import CLUSTER, make_backup

NAMES = Names("q", "ns")


def test_parse_and_render() -> None:
    spec = QuorumSpec.from_spec(
        {
            "restoreFrom": {
                "backup": "s3://b/p/20261126T000000Z-00000000000000000042",
                "s3": {"credentialsSecret": "creds", "endpoint": "http://s3:8333"},
            },
            "clusterId": CLUSTER,
        }
    )
    assert spec.restore_from is not None
    sts = builders.statefulset(spec, NAMES, Owner("q", "u"), 1)
    (init,) = sts["spec"]["template"]["spec"]["initContainers"]
    env = {e["name"]: e for e in init["env"]}
    assert env["RESTORE_FROM"]["value"].endswith("-00000000000000000042")
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "creds"
    assert env["AWS_ENDPOINT_URL"]["value"] == "http://s3:8333"
    (node,) = sts["spec"]["template"]["spec"]["containers"]
    assert not any(e["name"].startswith(("AWS_", "RESTORE")) for e in node["env"])
    pvc = RestoreFrom.from_spec({"backup": "n1", "pvc": {"claimName": "old"}})
    assert pvc is not None and pvc.url == f"{RESTORE_DIR}/n1"
    assert pvc.volumes()[0]["persistentVolumeClaim"] == {"claimName": "old", "readOnly": True}
    assert QuorumSpec.from_spec({}).restore_from is None


def _run(tmp: Path, node: int, restore: str, *, formed: bool = False, cid: str = CLUSTER):
    cfg = tmp / "etc"
    cfg.mkdir(exist_ok=True)
    cm = builders.configmap(QuorumSpec(), NAMES, Owner("q", "u"), formed=formed)
    for key, value in cm["data"].items():
        (cfg / key).write_text(value)
    script = builders.FORMAT_SCRIPT.replace(CONFIG_DIR, str(cfg))
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "CLUSTER_ID": cid,
        "METAQUORUM_NODE_ID": str(node),
        "METAQUORUM_METADATA_LOG_DIR": str(tmp / f"data-{node}"),
        "METAQUORUM_LISTENERS": "CONTROLLER://127.0.0.1:9093",
        "METAQUORUM_ADVERTISED_LISTENERS": f"CONTROLLER://{NAMES.pod_fqdn(node)}:9093",
        "RESTORE_FROM": restore,
    }
    return subprocess.run(
        ["sh", "-c", script, "metaquorum-format", "--config", str(cfg / CONFIG_FILE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_pod_0_of_a_new_quorum_is_restored(tmp_path: Path) -> None:
    m = make_backup(tmp_path)
    p = _run(tmp_path, 0, str(tmp_path / "dest" / "b1"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "restored b1" in p.stdout
    meta = (tmp_path / "data-0" / "meta.properties").read_text()
    assert f"cluster.id={CLUSTER}" in meta and "node.id=0" in meta
    logs = sorted((tmp_path / "data-0" / "__cluster_metadata-0").glob("*.log"))
    assert logs and (
        m.snapshot is None
        or any(
            f.name == m.snapshot.name
            for f in (tmp_path / "data-0" / "__cluster_metadata-0").iterdir()
        )
    )
    # a second start finds a formatted volume of this cluster: left alone
    again = _run(tmp_path, 0, str(tmp_path / "dest" / "b1"))
    assert again.returncode == 0 and "volume formatted for cluster" in again.stdout


def test_another_clusters_backup_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    make_backup(tmp_path)
    p = _run(tmp_path, 0, str(tmp_path / "dest" / "b1"), cid="MkU3OEVBNTcwNTJENDM2Qk")
    assert p.returncode == builders.REFUSED_EXIT
    (line,) = [x for x in p.stdout.splitlines() if x.startswith(builders.REFUSED_PREFIX)]
    assert f"is of cluster {CLUSTER}" in line
    assert not (tmp_path / "data-0" / "meta.properties").exists()
    missing = _run(tmp_path, 0, str(tmp_path / "dest" / "nope"))
    assert missing.returncode == builders.REFUSED_EXIT
    assert "no manifest" in missing.stdout


def test_other_pods_and_a_formed_quorum_never_restore(tmp_path: Path) -> None:
    make_backup(tmp_path)
    for node, formed in ((1, False), (0, True)):
        p = _run(tmp_path, node, str(tmp_path / "dest" / "b1"), formed=formed)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "restored" not in p.stdout
        meta = (tmp_path / f"data-{node}" / "meta.properties").read_text()
        assert f"cluster.id={CLUSTER}" in meta

"""`spec.restoreFrom`: a new MetadataQuorum whose pod 0 starts from a backup (issue 31).

Role: parse `spec.restoreFrom` (a backup's URL/NAME on S3 with a credentials Secret, or a
backup NAME on a PVC) and give the format init container what it needs to run
`metaquorum backup restore URL/NAME --config <server.properties> --cluster-id $CLUSTER_ID`
instead of `storage format --standalone` (node_config.FORMAT_SCRIPT): the env (RESTORE_FROM, the
S3 credentials as `secretKeyRef`, endpoint and region: s3_env.py) and, for a PVC, its volume and
mount.

When it applies: only where `--standalone` would — pod 0 with an empty volume while the quorum
has never had a leader (the ConfigMap's `bootstrap: standalone`). The restored pod is a
one-voter quorum holding every record of the backup below its end offset, with the backup's
cluster id and a new directory id; pods 1.. format `--no-initial-controllers` and are added one
at a time as usual. Once the quorum has had a leader, restoreFrom is never used again (a pod 0
that later loses its disk rejoins empty, as any pod). The CRD sets it only at creation and
requires spec.clusterId equal to the backup's (restore refuses another cluster's backup with one
line, the pod's init container exits 3 and the VolumeRefused condition shows the line).

Invariants: pure; credentials only as secretKeyRef env; nothing here imports model.py (model
imports this).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from metaquorum_operator.s3_env import s3_env

RESTORE_DIR = "/var/lib/metaquorum-restore"  # where a PVC source is mounted (read-only)


@dataclass(frozen=True, slots=True)
class RestoreFrom:
    url: str  # URL/NAME of the backup, as the init container sees it
    credentials_secret: str | None = None
    endpoint: str | None = None
    region: str | None = None
    pvc_claim: str | None = None

    @classmethod
    def from_spec(cls, raw: Mapping[str, Any] | None) -> RestoreFrom | None:
        if not raw:
            return None
        pvc = raw.get("pvc") or {}
        if pvc:
            name = str(raw.get("backup") or "").strip("/")
            return cls(url=f"{RESTORE_DIR}/{name}", pvc_claim=str(pvc["claimName"]))
        s3 = raw.get("s3") or {}
        return cls(
            url=str(raw.get("backup") or ""),
            credentials_secret=s3.get("credentialsSecret") or None,
            endpoint=s3.get("endpoint") or None,
            region=s3.get("region") or None,
        )

    def env(self) -> list[dict[str, Any]]:
        restore: dict[str, Any] = {"name": "RESTORE_FROM", "value": self.url}
        return [restore, *s3_env(self.credentials_secret or None, self.endpoint, self.region)]

    def volumes(self) -> list[dict[str, Any]]:
        if not self.pvc_claim:
            return []
        return [
            {
                "name": "restore",
                "persistentVolumeClaim": {"claimName": self.pvc_claim, "readOnly": True},
            }
        ]

    def mounts(self) -> list[dict[str, Any]]:
        if not self.pvc_claim:
            return []
        return [{"name": "restore", "mountPath": RESTORE_DIR, "readOnly": True}]

"""A local-directory PV provisioner for the real-kubelet target (E2E_CLUSTER=local).

Role: what a CSI driver or a local-path provisioner does, as a loop: create the default
StorageClass `--storage-class` (Immediate binding) and, for each pending PVC of it, a `local` PV
(a directory under --state, node affinity to --node) pre-bound to the claim; the kubelet mounts
it and applies the pod's fsGroup. Released PVs are deleted with their directory (reclaimPolicy
Delete). Shares the stand-in's provisioning code (volumes.provision). The default class does not
allow volume expansion; two more do (expansion.py): XFS on a loopback file per PV, grown online
when its PVC's request grows (expansion.EXPANDABLE_CLASS), or, as a driver without online
expansion, grown when a new pod mounts it (expansion.OFFLINE_CLASS: FileSystemResizePending
meanwhile). Stopped by PID.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.rest import ApiException

sys.path.insert(0, str(Path(__file__).resolve().parent))
import expansion
import volumes

PROVISIONER = "e2e.metaquorum.dev/local-dirs"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--state", type=Path, required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--storage-class", required=True)
    args = ap.parse_args(argv)
    api = config.new_client_from_config(args.kubeconfig)
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": args.storage_class,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
    while True:
        try:
            for cls in (sc, *expansion.storage_classes(PROVISIONER)):
                with contextlib.suppress(ApiException):
                    storage.create_storage_class(cls)
            expansion.release(core)
            volumes.provision(core, args.state, args.storage_class, args.node, PROVISIONER)
            expansion.provision(core, args.state, args.node, PROVISIONER)
            expansion.expand(core)
        except Exception as e:  # an API blip: retry on the next round
            print(f"provisioner: {e}", file=sys.stderr, flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())

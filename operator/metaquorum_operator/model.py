"""The MetadataQuorum resource as typed values: the spec the user asks for, names and labels.

Role: parse a MetadataQuorum's `spec` (already defaulted and validated by the apiserver from
crds/metadataquorums.metaquorum.dev.yaml) into a frozen `QuorumSpec`, and derive every name the
operator uses from the resource name, so builders, planner and handlers agree. Also the
operator-wide settings (`OperatorConfig`, from the operator's environment), and the user's
controls given as annotations (`Controls`).

Invariants: pure (no IO); parsing applies the same defaults as the CRD so a spec read from an
older object without defaults still yields the same desired state; names are the resource name
plus fixed suffixes (DNS-1035 safe when the resource name is).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from metaquorum_operator.membership import CatchUp
from metaquorum_operator.restore_from import RestoreFrom

GROUP = "metaquorum.dev"
VERSION = "v1alpha1"
PLURAL = "metadataquorums"
KIND = "MetadataQuorum"
API_VERSION = f"{GROUP}/{VERSION}"

DATA_DIR = "/var/lib/metaquorum"
CONFIG_DIR = "/etc/metaquorum"
CONFIG_FILE = "server.properties"
TLS_DIR = "/etc/metaquorum/tls"
CLUSTER_DOMAIN = "cluster.local"

# Annotations on a MetadataQuorum (or, for the manual roll, on one of its pods) that control
# the operator (docs/operator.md, "Everyday controls"). The value "true" (any case) turns one on.
PAUSE_ANNOTATION = "metaquorum.dev/pause-reconciliation"
MANUAL_ROLL_ANNOTATION = "metaquorum.dev/manual-roll"
# names the survivor to re-form a lost quorum around (recover_from.py; its value is a pod name)
RECOVER_FROM_ANNOTATION = "metaquorum.dev/recover-from"

# Keys the operator writes itself; the CRD refuses them in spec.config (keep both lists equal).
MANAGED_KEYS = frozenset(
    {
        "node.id",
        "process.roles",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "listeners",
        "advertised.listeners",
        "controller.listener.names",
        "listener.security.protocol.map",
        "metadata.log.dir",
        "log.dirs",
        "metaquorum.http.listener",
        "controller.quorum.auto.join.enable",
        # the operator's roll asks a leader to resign over HTTP (POST /resign)
        "metaquorum.http.resign.enable",
        # the kubelet's probes and the chart's scraping speak plain HTTP to that listener
        "metaquorum.http.ssl.enable",
    }
)


@dataclass(frozen=True, slots=True)
class QuorumSpec:
    replicas: int = 3
    image: str = "metaquorum/node:0.1.0"
    image_pull_policy: str = "IfNotPresent"
    storage_size: str = "1Gi"
    storage_class_name: str | None = None
    delete_claims_on_delete: bool = False
    delete_claims_on_scale_down: bool = True
    resources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    config: Mapping[str, str] = field(default_factory=dict)
    controller_port: int = 9093
    http_port: int = 8080
    tls_enabled: bool = False
    tls_secret_name: str | None = None
    cluster_id: str | None = None
    # spec.staticVoters: an adopted static quorum's controller.quorum.voters (migration.py)
    static_voters: str | None = None
    # the software version spec.image runs, when the user declares it (upgrades.py checks the
    # version skew before the first pod restarts; without it, once the first pod reports)
    version: str | None = None
    restore_from: RestoreFrom | None = None  # spec.restoreFrom (restore_from.py)
    # spec.podTemplate as given (placement.py renders it; the CRD checks its shape)
    pod_template: Mapping[str, Any] = field(default_factory=dict)
    # spec.readinessProbe / spec.livenessProbe (Strimzi's names): timings merged over the node
    # container's defaults (builders.PROBE_DEFAULTS); the CRD checks the fields and bounds
    readiness_probe: Mapping[str, int] = field(default_factory=dict)
    liveness_probe: Mapping[str, int] = field(default_factory=dict)

    @property
    def static_voter_ids(self) -> tuple[int, ...]:
        """The node ids of spec.staticVoters (`id@host:port,...`; the CRD checks the shape)."""
        text = self.static_voters or ""
        return tuple(sorted(int(v.split("@", 1)[0]) for v in text.split(",") if "@" in v))

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> QuorumSpec:
        storage = spec.get("storage") or {}
        listeners = spec.get("listeners") or {}
        tls = spec.get("tls") or {}
        return cls(
            replicas=int(spec.get("replicas", 3)),
            image=str(spec.get("image", "metaquorum/node:0.1.0")),
            image_pull_policy=str(spec.get("imagePullPolicy", "IfNotPresent")),
            storage_size=str(storage.get("size", "1Gi")),
            storage_class_name=storage.get("storageClassName") or None,
            delete_claims_on_delete=bool(storage.get("deleteClaimsOnDelete", False)),
            delete_claims_on_scale_down=bool(storage.get("deleteClaimsOnScaleDown", True)),
            resources={k: dict(v) for k, v in (spec.get("resources") or {}).items()},
            config={str(k): str(v) for k, v in (spec.get("config") or {}).items()},
            controller_port=int(listeners.get("controllerPort", 9093)),
            http_port=int(listeners.get("httpPort", 8080)),
            tls_enabled=bool(tls.get("enabled", False)),
            tls_secret_name=tls.get("secretName") or None,
            cluster_id=spec.get("clusterId") or None,
            static_voters=str(spec["staticVoters"]) if spec.get("staticVoters") else None,
            version=str(spec["version"]) if spec.get("version") else None,
            restore_from=RestoreFrom.from_spec(spec.get("restoreFrom")),
            pod_template=dict(spec.get("podTemplate") or {}),
            readiness_probe=_probe(spec.get("readinessProbe")),
            liveness_probe=_probe(spec.get("livenessProbe")),
        )


PROBE_FIELDS = (
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
)


def _probe(value: Any) -> dict[str, int]:
    """A spec.*Probe's timings as given (known fields only; the CRD types and bounds them)."""
    return {k: int(v) for k, v in (value or {}).items() if k in PROBE_FIELDS and v is not None}


def annotation_on(annotations: Mapping[str, str] | None, key: str) -> bool:
    """Whether annotation `key` is "true" (case and surrounding blanks ignored); absent, "false"
    or anything else is off."""
    return str((annotations or {}).get(key, "")).strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class Controls:
    """What the user asked through the MetadataQuorum's annotations: `paused`
    (metaquorum.dev/pause-reconciliation: "true": the operator changes nothing) and
    `manual_roll` (metaquorum.dev/manual-roll: "true": restart every pod once)."""

    paused: bool = False
    manual_roll: bool = False
    recover_from: str | None = None  # metaquorum.dev/recover-from: checked only (issue 31)

    @classmethod
    def from_annotations(cls, annotations: Mapping[str, str] | None) -> Controls:
        recover = str((annotations or {}).get(RECOVER_FROM_ANNOTATION, "")).strip()
        return cls(
            paused=annotation_on(annotations, PAUSE_ANNOTATION),
            manual_roll=annotation_on(annotations, MANUAL_ROLL_ANNOTATION),
            recover_from=recover or None,
        )


@dataclass(frozen=True, slots=True)
class Names:
    """Every object name derived from one MetadataQuorum."""

    name: str
    namespace: str

    @property
    def statefulset(self) -> str:
        return self.name

    @property
    def headless_service(self) -> str:
        return f"{self.name}-headless"

    @property
    def client_service(self) -> str:
        return self.name

    @property
    def configmap(self) -> str:
        return f"{self.name}-config"

    @property
    def pdb(self) -> str:
        return self.name

    def pod(self, ordinal: int) -> str:
        return f"{self.name}-{ordinal}"

    def pod_fqdn(self, ordinal: int) -> str:
        return f"{self.pod(ordinal)}.{self.headless_service}.{self.namespace}.svc.{CLUSTER_DOMAIN}"

    def selector_labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": "metaquorum", "app.kubernetes.io/instance": self.name}

    def labels(self) -> dict[str, str]:
        return {
            **self.selector_labels(),
            "app.kubernetes.io/component": "controller",
            "app.kubernetes.io/managed-by": "metaquorum-operator",
        }

    def label_selector(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.selector_labels().items()))


@dataclass(frozen=True, slots=True)
class Owner:
    """The owning MetadataQuorum, for ownerReferences."""

    name: str
    uid: str

    def reference(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """Operator-wide settings, from the operator's environment: when an observer counts as
    caught up and how long it must stay so before it is added as a voter
    (METAQUORUM_CATCH_UP_MAX_LAG_RECORDS, METAQUORUM_CATCH_UP_MAX_LAG_MS,
    METAQUORUM_CATCH_UP_HOLD_MS), and how long a PVC may wait in FileSystemResizePending before
    its pod is restarted (METAQUORUM_FS_RESIZE_GRACE_MS); membership.CatchUp has the
    defaults."""

    catch_up: CatchUp = field(default_factory=CatchUp)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorConfig:
        env = os.environ if env is None else env
        values: dict[str, int] = {}
        for name, key in (
            ("max_lag_records", "METAQUORUM_CATCH_UP_MAX_LAG_RECORDS"),
            ("max_lag_ms", "METAQUORUM_CATCH_UP_MAX_LAG_MS"),
            ("hold_ms", "METAQUORUM_CATCH_UP_HOLD_MS"),
            ("fs_resize_grace_ms", "METAQUORUM_FS_RESIZE_GRACE_MS"),
        ):
            raw = env.get(key)
            if raw:
                if not raw.isdigit():
                    raise ValueError(f"{key} must be a non-negative integer, not {raw!r}")
                values[name] = int(raw)
        return cls(catch_up=CatchUp(**values))


def new_cluster_id(random_bytes: Callable[[int], bytes] = os.urandom) -> str:
    """A cluster id as `kafka-storage random-uuid` prints it: a version-4 UUID in Kafka's
    22-character URL-safe base64 without padding, never starting with '-' (Kafka's
    Uuid.randomUuid redraws those, as they read as a command-line option)."""
    while True:
        b = bytearray(random_bytes(16))
        b[6] = (b[6] & 0x0F) | 0x40  # version 4
        b[8] = (b[8] & 0x3F) | 0x80  # IETF variant
        text = base64.urlsafe_b64encode(bytes(b)).decode().rstrip("=")
        if not text.startswith("-"):
            return text

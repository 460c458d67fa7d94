"""The MetadataQuorum resource as typed values: the spec the user asks for, names and labels.

Role: parse a MetadataQuorum's `spec` (already defaulted and validated by the apiserver from
crds/metadataquorums.metaquorum.dev.yaml) into a frozen `QuorumSpec`, and derive every name the
operator uses from the resource name, so builders, planner and handlers agree. Also the
operator-wide settings (`OperatorConfig`, from the operator's environment).

Invariants: pure (no IO); parsing applies the same defaults as the CRD so a spec read from an
older object without defaults still yields the same desired state; names are the resource name
plus fixed suffixes (DNS-1035 safe when the resource name is).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
DEFAULT_NODE_COMMAND = ("metaquorum", "server", "start")

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
    resources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    config: Mapping[str, str] = field(default_factory=dict)
    controller_port: int = 9093
    http_port: int = 8080
    tls_enabled: bool = False
    tls_secret_name: str | None = None
    cluster_id: str | None = None

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
            resources={k: dict(v) for k, v in (spec.get("resources") or {}).items()},
            config={str(k): str(v) for k, v in (spec.get("config") or {}).items()},
            controller_port=int(listeners.get("controllerPort", 9093)),
            http_port=int(listeners.get("httpPort", 8080)),
            tls_enabled=bool(tls.get("enabled", False)),
            tls_secret_name=tls.get("secretName") or None,
            cluster_id=spec.get("clusterId") or None,
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


# How the pods form their quorum (METAQUORUM_QUORUM_MODE):
# - "static": the real node. `controller.quorum.voters` lists every pod's stable name, each pod
#   formats its own volume on first start, the StatefulSet starts at spec.replicas and a change of
#   replicas is refused (it would need KIP-853 voter changes, which the node does not support yet).
# - "none": a test workload that forms no quorum (e2e/placeholder_node.py): the StatefulSet moves
#   one replica at a time and nothing is described.
QUORUM_MODES = ("static", "none")
# A MetadataQuorum may override the operator's quorum mode with this annotation (the e2e tier
# runs its placeholder-workload tests this way beside real-node quorums under one operator).
QUORUM_MODE_ANNOTATION = "metaquorum.dev/quorum-mode"


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """Operator-wide settings. `node_command` is the node container's command (default
    `metaquorum server start`); `quorum_mode` is one of QUORUM_MODES (default "static"). The e2e
    tier's placeholder workload sets METAQUORUM_NODE_COMMAND (a JSON list) and mode "none"."""

    node_command: tuple[str, ...] = DEFAULT_NODE_COMMAND
    quorum_mode: str = "static"

    @property
    def static_quorum(self) -> bool:
        return self.quorum_mode == "static"

    def for_resource(self, annotations: Mapping[str, str]) -> OperatorConfig:
        """This config with the resource's QUORUM_MODE_ANNOTATION applied (unknown values are
        ignored: the operator's own mode stays)."""
        mode = annotations.get(QUORUM_MODE_ANNOTATION)
        if mode in QUORUM_MODES and mode != self.quorum_mode:
            return OperatorConfig(node_command=self.node_command, quorum_mode=mode)
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorConfig:
        env = os.environ if env is None else env
        mode = env.get("METAQUORUM_QUORUM_MODE") or "static"
        if mode not in QUORUM_MODES:
            raise ValueError(f"METAQUORUM_QUORUM_MODE must be one of {', '.join(QUORUM_MODES)}")
        raw = env.get("METAQUORUM_NODE_COMMAND")
        if not raw:
            return cls(quorum_mode=mode)
        cmd = json.loads(raw)
        if not isinstance(cmd, list) or not cmd or not all(isinstance(c, str) for c in cmd):
            raise ValueError("METAQUORUM_NODE_COMMAND must be a non-empty JSON list of strings")
        return cls(node_command=tuple(cmd), quorum_mode=mode)


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

"""The CRD refuses the TLS settings the node would refuse (issue 20), on the real kube-apiserver.

Each bad `spec.config` is refused by the apiserver (its CEL rule, with the rule's message) AND,
where the node reads that key, by the node's own validation of the configuration the operator
would write (builders: server.properties + the container's METAQUORUM_<KEY> env, then
net/tls_settings.server_tls_settings, as `metaquorum server start` does at start) — so the two
stay in step. A spec with every accepted TLS value passes both. Kafka's JKS and PKCS12 stores,
SASL, the Java-only keys, unknown TLS versions and cipher suites are covered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness import Cluster

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
CRD = ROOT / "crds" / "metadataquorums.metaquorum.dev.yaml"

TLS13 = "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256"


def manifest(ns: str, config: dict[str, str], tls: bool = True) -> str:
    spec: dict[str, Any] = {"replicas": 3, "config": config}
    if tls:
        spec["tls"] = {"enabled": True, "secretName": "quorum-tls"}
    return json.dumps(
        {
            "apiVersion": "metaquorum.dev/v1alpha1",
            "kind": "MetadataQuorum",
            "metadata": {"name": "tlsq", "namespace": ns},
            "spec": spec,
        }
    )


def node_refusal(config: dict[str, str]) -> str | None:
    """The node's refusal of what the operator would write for this spec.config, or None."""
    from metaquorum.net.endpoint import ConfigError
    from metaquorum.net.tls_settings import server_tls_settings
    from metaquorum.runtime.config import env_overrides
    from metaquorum_operator import builders
    from metaquorum_operator.model import Names, QuorumSpec

    spec = QuorumSpec(tls_enabled=True, tls_secret_name="quorum-tls", config=config)
    props = builders.node_properties(spec, Names("tlsq", "ns"))
    env = {e["name"]: e["value"] for e in builders.tls_env(spec)}
    try:
        server_tls_settings({**props, **env_overrides(env)}, "CONTROLLER")
    except ConfigError as e:
        return str(e)
    return None


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", str(CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/metadataquorums.metaquorum.dev")


# (spec.config, the CRD's message, a phrase of the node's own refusal or None where the node
# does not read the key: SASL keys, as SASL can only be turned on through the protocol map the
# operator owns; a location the operator's env overrides)
CASES: list[tuple[dict[str, str], str, str | None]] = [
    ({"ssl.keystore.type": "JKS"}, "reads PEM only, the node refuses JKS and PKCS12", "PEM only"),
    ({"ssl.truststore.type": "PKCS12"}, "reads PEM only", "PEM only"),
    ({"listener.name.controller.ssl.keystore.type": "pkcs12"}, "reads PEM only", "PEM only"),
    ({"ssl.keystore.password": "x"}, "not used with PEM stores", "not used with a PEM keystore"),
    ({"ssl.truststore.password": "x"}, "not used with PEM stores", "not used with a PEM trust"),
    ({"ssl.keystore.certificate.chain": "x"}, "come from the Secret spec.tls.secretName", "both"),
    ({"ssl.truststore.location": "/x"}, "come from the Secret spec.tls.secretName", None),
    ({"sasl.enabled.mechanisms": "PLAIN"}, "does not support SASL", None),
    ({"listener.name.controller.sasl.enabled.mechanisms": "SCRAM-SHA-512"}, "SASL", None),
    ({"security.protocol": "SASL_SSL"}, "does not support SASL", None),
    ({"ssl.provider": "SunJSSE"}, "Java-only", "Java-only"),
    ({"ssl.engine.factory.class": "x.Y"}, "Java-only", "Java-only"),
    ({"ssl.client.auth": "always"}, "ssl.client.auth must be required", "ssl.client.auth=always"),
    ({"ssl.endpoint.identification.algorithm": "ldaps"}, "must be https", "use https"),
    ({"ssl.protocol": "SSLv3"}, "ssl.protocol must be TLSv1.3", "ssl.protocol=SSLv3"),
    ({"ssl.enabled.protocols": "TLSv1.2,TLSv1.1"}, "list TLSv1.2 and/or TLSv1.3", "TLSv1.1"),
    ({"ssl.cipher.suites": "TLS_RSA_WITH_RC4_128_MD5"}, "use IANA names", "not supported"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "all three TLS 1.3 suites", "all three"),
]


@pytest.mark.usefixtures("crd")
@pytest.mark.parametrize(("config", "message", "node"), CASES, ids=lambda v: str(v)[:40])
def test_crd_refuses_what_the_node_refuses(
    cluster: Cluster,
    namespace: str,
    config: dict[str, str],
    message: str,
    node: str | None,
) -> None:
    proc = cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=manifest(namespace, config), check=False
    )
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    refused = node_refusal(config)
    if node is None:
        assert refused is None  # the node ignores it (or the operator's env wins): CRD only
    else:
        assert refused is not None and node in refused, refused


def test_every_value_the_node_accepts_passes_the_crd(
    cluster: Cluster, crd: None, namespace: str
) -> None:
    good = {
        "ssl.keystore.type": "PEM",
        "listener.name.controller.ssl.truststore.type": "pem",
        "ssl.client.auth": "requested",
        "ssl.endpoint.identification.algorithm": "",
        "ssl.protocol": "TLSv1.2",
        "ssl.enabled.protocols": "TLSv1.2, TLSv1.3",
        "ssl.cipher.suites": f"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,{TLS13}",
        "ssl.key.password": "only-for-an-encrypted-key",
    }
    assert node_refusal(good) is None
    proc = cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=manifest(namespace, good), check=False
    )
    assert proc.returncode == 0, proc.stderr
    # and a plaintext quorum is untouched by these rules
    plain = cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=manifest(namespace, {}, tls=False)
    )
    assert plain.returncode == 0

"""The operator's own TLS client material for a MetadataQuorum with `spec.tls.enabled`.

Role: from the data of the Secret the pods mount (`spec.tls.secretName`: base64 values as the
API returns them), the client context the operator's DescribeQuorum and Add/RemoveRaftVoter
connections need (`AdminClient(..., tls=...)`): the same certificate and CA the nodes use
(usages server auth and client auth), with hostname verification of the pods' stable names, as a
node's raft client. `client_tls_from_secret` accepts `tls-combined.pem` (key + chain) or
`tls.crt` + `tls.key`, and `ca.crt`; the PEM travels in memory through Kafka's in-config keys
(`ssl.keystore.certificate.chain` / `ssl.keystore.key` / `ssl.truststore.certificates`).
`SecretTls` reads the Secret (an uncached GET each reconcile, RBAC `get` on Secrets: the chart's
`rbac.secretNamespaces`) and rebuilds the context only when the Secret's resourceVersion changes,
so a certificate cert-manager renews is used from the next reconcile on. It also checks what the
nodes need (`NODE_KEYS`: the pods read `tls-combined.pem` and `ca.crt` from the mounted Secret),
so a Secret the pods cannot use shows in the status, not only as crash-looping pods.

Invariants: a Secret that is absent, unreadable or lacks what is needed raises `ConfigError`
with one line naming the Secret (and key) and the fix; never a plaintext fallback.
"""

from __future__ import annotations

import base64
import binascii
import re
import ssl
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException
from metaquorum.net.endpoint import ConfigError
from metaquorum.net.tls import TlsContexts
from metaquorum.net.tls_settings import client_tls_settings

from metaquorum_operator.model import QuorumSpec

_KEY = re.compile(
    r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----.*?-----END (?:[A-Z]+ )?PRIVATE KEY-----", re.S
)


def _text(data: Mapping[str, str], key: str, secret: str) -> str | None:
    raw = data.get(key)
    if raw is None:
        return None
    try:
        return base64.b64decode(raw, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        raise ConfigError(f"Secret {secret}: {key} is not base64 PEM text") from None


def client_tls_from_secret(
    data: Mapping[str, str], secret: str = "the TLS Secret", endpoint_identification: str = "https"
) -> Callable[[], ssl.SSLContext]:
    """The client context provider for `AdminClient(tls=...)` from the Secret's `data`;
    `endpoint_identification`: the quorum's `ssl.endpoint.identification.algorithm` (its raft
    clients' host name check, which the operator follows as one more client)."""
    ca = _text(data, "ca.crt", secret)
    if ca is None:
        raise ConfigError(
            f"Secret {secret} has no ca.crt: add the CA that signs the pods' certificates"
        )
    combined = _text(data, "tls-combined.pem", secret)
    if combined is not None:
        found = _KEY.search(combined)
        if found is None:
            raise ConfigError(f"Secret {secret}: tls-combined.pem holds no private key")
        key, chain = found.group(0), (combined[: found.start()] + combined[found.end() :]).strip()
    else:
        key_text, crt_text = _text(data, "tls.key", secret), _text(data, "tls.crt", secret)
        if key_text is None or crt_text is None:
            raise ConfigError(
                f"Secret {secret} has neither tls-combined.pem nor tls.crt + tls.key: use "
                "cert-manager's CombinedPEM output or a kubernetes.io/tls Secret"
            )
        key, chain = key_text, crt_text
    settings = client_tls_settings(
        {
            "security.protocol": "SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": chain,
            "ssl.keystore.key": key,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": ca,
            "ssl.endpoint.identification.algorithm": endpoint_identification,
        }
    )
    assert settings is not None
    return TlsContexts(settings).client


# What the pods read from the mounted Secret (builders: ssl.keystore.location / truststore).
COMBINED, CA = "tls-combined.pem", "ca.crt"
NODE_KEYS = (COMBINED, CA)


def check_node_keys(data: Mapping[str, str], secret: str) -> None:
    """Refuse a Secret the nodes could not start with (one line: the key and the fix)."""
    for key in NODE_KEYS:
        if key not in data:
            fix = (
                "add additionalOutputFormats: [{type: CombinedPEM}] to its cert-manager "
                "Certificate (the nodes read the private key and chain from tls-combined.pem)"
                if key == COMBINED
                else "use an issuer that writes ca.crt (cert-manager's CA issuer does)"
            )
            raise ConfigError(f"Secret {secret} has no {key}: {fix}")


class SecretReader(Protocol):
    """`read_namespaced_secret` of kubernetes.client.CoreV1Api (a model in the unit tests)."""

    def read_namespaced_secret(self, name: str, namespace: str) -> Any: ...


class SecretTls:
    """The operator's client context per TLS Secret, rebuilt when the Secret changes."""

    def __init__(self, api: SecretReader) -> None:
        self.api = api
        self._cache: dict[tuple[str, str, str], tuple[str, Callable[[], ssl.SSLContext]]] = {}

    def client(
        self, namespace: str, secret: str, endpoint_identification: str = "https"
    ) -> Callable[[], ssl.SSLContext]:
        where = f"{namespace}/{secret}"
        try:
            obj = self.api.read_namespaced_secret(secret, namespace)
        except ApiException as e:
            if e.status == 404:
                raise ConfigError(
                    f"Secret {where} (spec.tls.secretName) does not exist: create it, e.g. "
                    "with a cert-manager Certificate (docs/operator.md)"
                ) from None
            if e.status == 403:
                raise ConfigError(
                    f"the operator may not read Secret {where}: add {namespace} to the chart's "
                    "rbac.secretNamespaces (or set operator.watchNamespace)"
                ) from None
            raise ConfigError(f"cannot read Secret {where}: {e.status} {e.reason}") from None
        version = str(obj.metadata.resource_version or "")
        key = (namespace, secret, endpoint_identification)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        data = dict(obj.data or {})
        check_node_keys(data, where)
        provider = client_tls_from_secret(data, where, endpoint_identification)
        self._cache[key] = (version, provider)
        return provider


def tls_status(spec: QuorumSpec) -> dict[str, Any]:
    """`status.tls`: the CONTROLLER listener's security as the operator configures the pods
    and connects to them itself (its DescribeQuorum answering with TLS on means it works)."""
    if not spec.tls_enabled:
        return {"enabled": False, "securityProtocol": "PLAINTEXT"}
    return {
        "enabled": True,
        "securityProtocol": "SSL",
        "clientAuth": spec.config.get("ssl.client.auth", "required").lower(),
        "secretName": spec.tls_secret_name,
    }

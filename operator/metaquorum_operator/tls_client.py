"""The operator's own TLS client material for a MetadataQuorum with `spec.tls.enabled`.

Role: from the data of the Secret the pods mount (`spec.tls.secretName`: base64 values as the
API returns them), the client context the operator's DescribeQuorum connection needs
(`AdminClient(..., tls=...)`): the same certificate and CA the nodes use (usages server auth and
client auth), with hostname verification of the pods' stable names, as a node's raft client.
Accepts `tls-combined.pem` (key + chain, what the nodes read) or `tls.crt` + `tls.key`, and
`ca.crt`; the PEM travels in memory through Kafka's in-config keys
(`ssl.keystore.certificate.chain` / `ssl.keystore.key` / `ssl.truststore.certificates`).

Invariants: pure apart from building the context; a Secret that lacks what is needed raises
`ConfigError` with one line naming the Secret key and the fix.
"""

from __future__ import annotations

import base64
import binascii
import re
import ssl
from collections.abc import Callable, Mapping

from metaquorum.net.endpoint import ConfigError
from metaquorum.net.tls import TlsContexts
from metaquorum.net.tls_settings import client_tls_settings

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
    data: Mapping[str, str], secret: str = "the TLS Secret"
) -> Callable[[], ssl.SSLContext]:
    """The client context provider for `AdminClient(tls=...)` from the Secret's `data`."""
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
        }
    )
    assert settings is not None
    return TlsContexts(settings).client

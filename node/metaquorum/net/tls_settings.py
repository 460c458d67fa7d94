"""Kafka's security settings of a listener or a client, validated (the `ssl.*` keys of Kafka's
`SslConfigs`, `listener.security.protocol.map`, a client's `security.protocol`).

Role: read them into a frozen `TlsSettings` with Kafka's names, defaults and semantics (see
net/tls.py, which builds the `ssl.SSLContext`s): `ssl.keystore.type` and `ssl.truststore.type`
default to JKS, so a keystore without `type=PEM` is refused (we read PEM only); `ssl.client.auth`
none | requested | required; `ssl.endpoint.identification.algorithm` `https` (the default)
verifies the server's host name or IP, empty disables that check (the chain is still verified);
`ssl.enabled.protocols` TLSv1.2,TLSv1.3; `ssl.cipher.suites` by their IANA names (Java's), empty
= the library's defaults, only TLS 1.2 suites = no TLS 1.3 (as Java); the listener's own
`listener.name.<listener>.ssl.*` wins; a listener with no entry in an explicitly set
`listener.security.protocol.map` is an error, and without the map a controller listener not
named after a protocol is PLAINTEXT (Kafka's `effectiveListenerSecurityProtocolMap`).

Invariants: pure (no file is read here: certificates may exist only where the node runs);
every unsupported or invalid setting raises `ConfigError` with ONE line naming the key and the
fix, never ignored and never a silent plaintext fallback (SASL_PLAINTEXT, SASL_SSL, JKS, PKCS12,
an unknown protocol or TLS version, a cipher suite we cannot honour).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from metaquorum.net.endpoint import ConfigError

PROTOCOL_MAP = "listener.security.protocol.map"
SECURITY_PROTOCOL = "security.protocol"  # a client's (--command-config)
KNOWN_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_TLS13_SUITES = frozenset(
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
)
# TLS 1.2 suites: Kafka (Java) names -> OpenSSL names. The AEAD suites with forward secrecy.
_TLS12_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
}


@dataclass(frozen=True, slots=True)
class TlsSettings:
    keystore_location: Path | None
    keystore_chain: str | None  # PEM text (ssl.keystore.certificate.chain)
    keystore_key: str | None  # PEM text (ssl.keystore.key)
    key_password: str | None
    truststore_location: Path | None
    truststore_certificates: str | None  # PEM text
    client_auth: str  # none | requested | required
    verify_hostname: bool
    protocols: tuple[str, ...]
    cipher_suites: tuple[str, ...]

    @property
    def has_keystore(self) -> bool:
        return self.keystore_location is not None or self.keystore_chain is not None

    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.keystore_location, self.truststore_location) if p)


def _csv(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def listener_security_protocol(props: Mapping[str, str], listener: str) -> str:
    """PLAINTEXT or SSL for `listener`; anything else is refused with the fix."""
    raw = props.get(PROTOCOL_MAP, "").strip()
    if not raw:
        # Kafka's default map names the protocols themselves; a controller listener named
        # otherwise (CONTROLLER) is PLAINTEXT.
        proto = listener if listener in KNOWN_PROTOCOLS else "PLAINTEXT"
        return _supported(proto, f"{PROTOCOL_MAP} (default)", listener)
    mapping: dict[str, str] = {}
    for item in _csv(raw):
        name, sep, proto = item.partition(":")
        if not sep or not name.strip() or not proto.strip():
            raise ConfigError(f"{PROTOCOL_MAP}: {item!r} is not NAME:PROTOCOL, e.g. CONTROLLER:SSL")
        mapping[name.strip()] = proto.strip().upper()
    if listener not in mapping:
        raise ConfigError(
            f"{PROTOCOL_MAP} has no entry for listener {listener}: "
            f"add {listener}:SSL (or {listener}:PLAINTEXT) to {PROTOCOL_MAP}"
        )
    return _supported(mapping[listener], PROTOCOL_MAP, listener)


def _supported(proto: str, key: str, listener: str) -> str:
    if proto in ("PLAINTEXT", "SSL"):
        return proto
    if proto in ("SASL_PLAINTEXT", "SASL_SSL"):
        raise ConfigError(
            f"{key}: {listener}:{proto}: metaquorum does not support SASL; use {listener}:SSL "
            "with ssl.client.auth=required (mutual TLS) or PLAINTEXT"
        )
    raise ConfigError(
        f"{key}: {listener}:{proto} is not a security protocol: use one of "
        "PLAINTEXT, SSL (SASL_PLAINTEXT and SASL_SSL are not supported)"
    )


def server_tls_settings(props: Mapping[str, str], listener: str) -> TlsSettings | None:
    """The controller listener's TLS settings, or None when it is PLAINTEXT."""
    if listener_security_protocol(props, listener) != "SSL":
        return None
    prefix = f"listener.name.{listener.lower()}."
    merged = dict(props)
    for key, value in props.items():
        if key.startswith(prefix) and key[len(prefix) :].startswith("ssl."):
            merged[key[len(prefix) :]] = value  # Kafka: the listener's own ssl.* wins
    settings = tls_settings(merged)
    if not settings.has_keystore:
        raise ConfigError(
            f"listener {listener} is SSL but has no certificate: set ssl.keystore.type=PEM and "
            "ssl.keystore.location=<key+chain PEM> (or ssl.keystore.certificate.chain and "
            "ssl.keystore.key)"
        )
    return settings


def client_tls_settings(props: Mapping[str, str]) -> TlsSettings | None:
    """A client config's (`--command-config`) TLS settings, or None when PLAINTEXT."""
    proto = props.get(SECURITY_PROTOCOL, "PLAINTEXT").strip().upper() or "PLAINTEXT"
    if proto not in KNOWN_PROTOCOLS:
        raise ConfigError(
            f"{SECURITY_PROTOCOL}={proto} is not a security protocol: use PLAINTEXT or SSL"
        )
    if proto.startswith("SASL"):
        raise ConfigError(
            f"{SECURITY_PROTOCOL}={proto}: metaquorum does not support SASL; use "
            f"{SECURITY_PROTOCOL}=SSL (with a client certificate where the quorum requires one)"
        )
    return tls_settings(props) if proto == "SSL" else None


def tls_settings(props: Mapping[str, str]) -> TlsSettings:
    def get(key: str) -> str | None:
        value = props.get(key)
        return value.strip() if value is not None and value.strip() else None

    ks_loc, ks_chain, ks_key = (
        get("ssl.keystore.location"),
        get("ssl.keystore.certificate.chain"),
        get("ssl.keystore.key"),
    )
    if ks_loc or ks_chain or ks_key:
        _pem_only("ssl.keystore", get("ssl.keystore.type"))
        if get("ssl.keystore.password"):
            raise ConfigError(
                "ssl.keystore.password is not used with a PEM keystore (as in Kafka): remove it "
                "and set ssl.key.password if the private key is encrypted"
            )
        if ks_loc and (ks_chain or ks_key):
            raise ConfigError(
                "ssl.keystore.location and ssl.keystore.certificate.chain/.key are both set: "
                "keep one of them"
            )
        if not ks_loc and not (ks_chain and ks_key):
            raise ConfigError(
                "ssl.keystore.certificate.chain and ssl.keystore.key go together: set both"
            )
    ts_loc, ts_certs = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    if ts_loc or ts_certs:
        _pem_only("ssl.truststore", get("ssl.truststore.type"))
        if get("ssl.truststore.password"):
            raise ConfigError(
                "ssl.truststore.password is not used with a PEM truststore (as in Kafka): remove it"
            )
        if ts_loc and ts_certs:
            raise ConfigError(
                "ssl.truststore.location and ssl.truststore.certificates are both set: keep one"
            )
    for key in ("ssl.engine.factory.class", "ssl.provider"):
        if get(key):
            raise ConfigError(f"{key} is Java-only: metaquorum uses OpenSSL: remove {key}")
    proto = get("ssl.protocol") or "TLSv1.3"
    if proto not in ("TLS", "TLSv1.2", "TLSv1.3"):
        raise ConfigError(
            f"ssl.protocol={proto}: use TLSv1.3 (Kafka's default) or TLSv1.2; the protocols "
            "spoken are ssl.enabled.protocols"
        )
    client_auth = (get("ssl.client.auth") or "none").lower()
    if client_auth not in ("none", "requested", "required"):
        raise ConfigError(
            f"ssl.client.auth={client_auth}: use required (mutual TLS), requested or none"
        )
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", ""):
        raise ConfigError(
            f"ssl.endpoint.identification.algorithm={algorithm}: use https (verify the host "
            "name, Kafka's default) or leave it empty to disable that check"
        )
    protocols = _csv(get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3")
    for p in protocols:
        if p not in _TLS_VERSIONS:
            raise ConfigError(
                f"ssl.enabled.protocols: {p} is not supported: use TLSv1.2 and/or TLSv1.3"
            )
    if not protocols:
        raise ConfigError("ssl.enabled.protocols is empty: use TLSv1.2,TLSv1.3")
    suites = _csv(get("ssl.cipher.suites") or "")
    for s in suites:
        if s not in _TLS12_SUITES and s not in _TLS13_SUITES:
            raise ConfigError(
                f"ssl.cipher.suites: {s} is not supported: use IANA names among "
                f"{', '.join(sorted(_TLS13_SUITES | set(_TLS12_SUITES)))}"
            )
    listed13 = _TLS13_SUITES & set(suites)
    if listed13 and listed13 != _TLS13_SUITES:
        raise ConfigError(
            "ssl.cipher.suites: Python's ssl module cannot choose among the TLS 1.3 suites: list "
            "all three TLS_AES_* / TLS_CHACHA20_* suites or none (then TLSv1.3 is not used)"
        )
    settings = TlsSettings(
        keystore_location=Path(ks_loc) if ks_loc else None,
        keystore_chain=ks_chain,
        keystore_key=ks_key,
        key_password=props.get("ssl.key.password") or None,
        truststore_location=Path(ts_loc) if ts_loc else None,
        truststore_certificates=ts_certs,
        client_auth=client_auth,
        verify_hostname=algorithm == "https",
        protocols=protocols,
        cipher_suites=suites,
    )
    versions(settings)  # refuse a suite list that leaves no enabled protocol usable
    return settings


def _pem_only(prefix: str, kind: str | None) -> None:
    kind = (kind or "JKS").upper()
    if kind != "PEM":
        raise ConfigError(
            f"{prefix}.type={kind}{' (Kafka default)' if kind == 'JKS' else ''}: metaquorum "
            f"reads PEM only: set {prefix}.type=PEM (convert with `openssl pkcs12 -nodes`)"
        )


def versions(s: TlsSettings) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    usable = set(s.protocols)
    if s.cipher_suites:
        if not _TLS13_SUITES & set(s.cipher_suites):
            usable.discard("TLSv1.3")
        if not set(_TLS12_SUITES) & set(s.cipher_suites):
            usable.discard("TLSv1.2")
    if not usable:
        raise ConfigError(
            "ssl.cipher.suites leaves no protocol of ssl.enabled.protocols usable: list suites "
            "of an enabled protocol"
        )
    versions = sorted(_TLS_VERSIONS[p] for p in usable)
    return versions[0], versions[-1]


def openssl_tls12_ciphers(s: TlsSettings) -> list[str]:
    """The OpenSSL names of the TLS 1.2 suites `ssl.cipher.suites` lists (empty: defaults)."""
    return [_TLS12_SUITES[x] for x in s.cipher_suites if x in _TLS12_SUITES]

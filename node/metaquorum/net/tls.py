"""TLS for the Kafka-framed listener and its clients: `ssl.SSLContext`s from `TlsSettings`
(net/tls_settings.py), reloaded when their files change.

Role: a server context for the controller listener and a client context for the raft peers
and the admin client, with Python's `ssl` module only (no cryptography here). `TlsContexts`
holds the current pair and rebuilds it when a certificate or key file changes on disk
(Kubernetes rotates Secret-mounted files), checked at most once per `RELOAD_CHECK_S`; new
connections get the new certificates, open ones keep theirs. The listener keeps ONE server
context for its life; each handshake is moved to the current one in the ClientHello callback
(OpenSSL's servername callback, called with or without SNI), so a new certificate and trust
store apply without rebinding. A handshake the server refuses is logged with its reason, one
line (asyncio and uvloop log it only in debug mode).

Invariants: a failed reload keeps the previous contexts (and says so once per change); a file
that cannot be loaded at start raises `ConfigError` (one line naming the key and the fix); the
chain of the other side is always verified (`CERT_REQUIRED` on clients).
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from metaquorum.net.endpoint import ConfigError
from metaquorum.net.tls_settings import (
    TlsSettings,
    client_tls_settings,
    openssl_tls12_ciphers,
    versions,
)

log = logging.getLogger("metaquorum.tls")

RELOAD_CHECK_S = 1.0


def command_config_tls(path: Path) -> Callable[[], ssl.SSLContext] | None:
    """A CLI's `--command-config F`: the client context provider, or None for PLAINTEXT."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read --command-config {path}: {e.strerror}") from None
    props: dict[str, str] = {}
    for line in text.splitlines():  # Java properties, as storage/meta_properties reads them
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    try:
        settings = client_tls_settings(props)
        return None if settings is None else TlsContexts(settings).client
    except ConfigError as e:
        raise ConfigError(f"--command-config {path}: {e}") from None


def _common(ctx: ssl.SSLContext, s: TlsSettings, purpose: ssl.Purpose) -> ssl.SSLContext:
    ctx.minimum_version, ctx.maximum_version = versions(s)
    tls12 = openssl_tls12_ciphers(s)
    if tls12:
        ctx.set_ciphers(":".join(tls12))
    if s.has_keystore:
        _load_keystore(ctx, s)
    try:
        if s.truststore_location is not None:
            ctx.load_verify_locations(cafile=str(s.truststore_location))
        elif s.truststore_certificates is not None:
            ctx.load_verify_locations(cadata=s.truststore_certificates)
        else:
            ctx.load_default_certs(purpose)  # no truststore: the system's CAs, as Java's
    except (ssl.SSLError, OSError, ValueError) as e:
        raise ConfigError(
            f"ssl.truststore.*: cannot load the trusted certificates: {_reason(e)}: give PEM "
            "CA certificates"
        ) from None
    return ctx


def _load_keystore(ctx: ssl.SSLContext, s: TlsSettings) -> None:
    what = "ssl.keystore.location" if s.keystore_location else "ssl.keystore.certificate.chain"
    try:
        if s.keystore_location is not None:
            ctx.load_cert_chain(str(s.keystore_location), password=s.key_password)
            return
        pem = f"{s.keystore_key}\n{s.keystore_chain}\n".encode("ascii")
        _load_chain_from_memory(ctx, pem, s.key_password)
    except (ssl.SSLError, OSError, ValueError) as e:
        raise ConfigError(
            f"{what}: cannot load the certificate and key: {_reason(e)}: give a PEM certificate "
            "chain with its private key (and ssl.key.password if the key is encrypted)"
        ) from None


def _load_chain_from_memory(ctx: ssl.SSLContext, pem: bytes, password: str | None) -> None:
    """Python loads a chain from a path only. Linux: an anonymous memory file (memfd) read
    through /proc, so the key touches no file system and a read-only root file system (the
    operator's pod) is no obstacle; elsewhere a private 0600 temp file, removed at once."""
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        fd = os.memfd_create("metaquorum-keystore", os.MFD_CLOEXEC)
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(pem)
            ctx.load_cert_chain(f"/proc/self/fd/{fd}", password=password)
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="metaquorum-tls-") as tmp:
        path = Path(tmp) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        ctx.load_cert_chain(str(path), password=password)


def _reason(e: BaseException) -> str:
    if isinstance(e, ssl.SSLCertVerificationError) and e.verify_message:
        return e.verify_message
    if isinstance(e, ssl.SSLError) and e.reason:
        return e.reason.lower().replace("_", " ")
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e) or type(e).__name__


def handshake_reason(e: BaseException) -> str:
    """One readable phrase for a failed handshake ("certificate has expired", ...)."""
    return _reason(e)


class _ServerSSLObject(ssl.SSLObject):
    """Logs the reason when the server side of a handshake fails (one line per connection)."""

    refused = 0  # process-wide count, for tests and status

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError as e:
            _ServerSSLObject.refused += 1
            log.warning("refused a TLS connection at the handshake: %s", _server_reason(e))
            raise


def _server_reason(e: ssl.SSLError) -> str:
    if isinstance(e, ssl.SSLCertVerificationError):
        return f"client certificate not trusted ({_reason(e)})"
    reason = _reason(e)
    if "did not return a certificate" in reason:
        return "the client sent no certificate (ssl.client.auth=required)"
    if "wrong version number" in reason or "http request" in reason:
        return f"not a TLS client (plaintext?): {reason}"
    return reason


def refused_handshakes() -> int:
    """How many inbound handshakes this process refused."""
    return _ServerSSLObject.refused


def server_context(s: TlsSettings) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.sslobject_class = _ServerSSLObject
    ctx.verify_mode = {
        "none": ssl.CERT_NONE,
        "requested": ssl.CERT_OPTIONAL,
        "required": ssl.CERT_REQUIRED,
    }[s.client_auth]
    return _common(ctx, s, ssl.Purpose.CLIENT_AUTH)


def client_context(s: TlsSettings) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = s.verify_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED  # the chain is always verified, as in Kafka
    return _common(ctx, s, ssl.Purpose.SERVER_AUTH)


class TlsContexts:
    """The current server and client contexts of one `TlsSettings`, rebuilt when its files
    change (checked at most once per `RELOAD_CHECK_S`, when a context is asked for)."""

    _shared: ClassVar[dict[TlsSettings, TlsContexts]] = {}  # one per settings per process

    @classmethod
    def shared(cls, settings: TlsSettings) -> TlsContexts:
        """The one `TlsContexts` of this process for `settings` (the listener and the raft
        peers of a node watch the same files once)."""
        found = cls._shared.get(settings)
        if found is None:
            found = cls._shared[settings] = cls(settings)
        return found

    def __init__(self, settings: TlsSettings) -> None:
        self.settings = settings
        self._stamp = self._file_stamp()
        self._server = server_context(settings)
        self._client = client_context(settings)
        # The listener's context for its life: each ClientHello moves to the current one.
        self._front = self._server
        self._front.sni_callback = self._to_current
        self._checked = time.monotonic()
        self.reloads = 0

    def server(self) -> ssl.SSLContext:
        """The listener's context (stable; handshakes use the current certificates)."""
        return self._front

    def _to_current(self, sslobj: ssl.SSLObject, _name: str | None, _ctx: ssl.SSLContext) -> None:
        self.maybe_reload()
        if self._server is not self._front:
            sslobj.context = self._server

    def client(self) -> ssl.SSLContext:
        self.maybe_reload()
        return self._client

    def _file_stamp(self) -> tuple[tuple[int, int, int], ...]:
        out = []
        for p in self.settings.files():
            try:
                st = p.stat()
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append((-1, -1, -1))
        return tuple(out)

    def maybe_reload(self, *, force: bool = False) -> bool:
        now = time.monotonic()
        if not force and now - self._checked < RELOAD_CHECK_S:
            return False
        self._checked = now
        stamp = self._file_stamp()
        if stamp == self._stamp and not force:
            return False
        self._stamp = stamp  # a failed reload is reported once per change, not per check
        try:
            server, client = server_context(self.settings), client_context(self.settings)
        except ConfigError as e:
            log.warning("TLS files changed but cannot be loaded (keeping the old ones): %s", e)
            return False
        self._server, self._client = server, client
        self.reloads += 1
        files = ", ".join(str(p) for p in self.settings.files())
        log.info("TLS certificates reloaded from %s (new connections use them)", files)
        return True

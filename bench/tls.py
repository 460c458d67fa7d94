"""`python -m bench --tls` (`BENCH_TLS=1 make bench-quick`): our quorum on mutual TLS.

Role: one throw-away PKI per run, made with `openssl` (tests/support/pki.py): a CA and one node
certificate (SANs 127.0.0.1 and localhost, usages server + client auth). `server_props` are the
nodes' Kafka TLS keys (listener.security.protocol.map CONTROLLER:SSL, PEM keystore and
truststore, ssl.client.auth=required), so raft traffic between the voters is TLS; `goload_args`
make the Go load generator a mutual-TLS client (bench/goload/tls.go: crypto/tls, host name
verified); `client` is the context provider for the harness's own DescribeQuorum polls.
Only "ours" changes: the other systems run as without --tls.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from metaquorum.net.tls import TlsContexts
from metaquorum.net.tls_settings import client_tls_settings

from tests.support.pki import Pki, client_props, ssl_props


@dataclass(frozen=True)
class BenchTls:
    ca: Path
    keystore: Path  # PEM: private key then certificate (Kafka's PEM keystore file)

    @classmethod
    def create(cls, directory: Path) -> BenchTls:
        pki = Pki.create(directory)
        return cls(pki.ca, pki.issue("node"))

    def server_props(self) -> dict[str, str]:
        return ssl_props(self.keystore, self.ca)

    def goload_args(self) -> list[str]:
        return ["-tls-ca", str(self.ca), "-tls-cert", str(self.keystore)]

    def client(self) -> Callable[[], ssl.SSLContext]:
        props = dict(
            line.split("=", 1) for line in client_props(self.ca, self.keystore).splitlines()
        )
        settings = client_tls_settings(props)
        assert settings is not None
        return TlsContexts.shared(settings).client

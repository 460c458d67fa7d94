"""Test certificates made with the `openssl` command (as the e2e tier makes its PKI).

Role: a throw-away CA per test and leaf certificates signed by it (EC P-256: fast to make),
with chosen SANs and validity (`days=-1`: already expired), written as PEM files a node reads
with `ssl.keystore.type=PEM` (`<name>.pem`: PKCS#8 key + certificate, Kafka's keystore file
layout) and `ssl.truststore.type=PEM` (`ca.crt`).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

LOOPBACK_SANS = ("IP:127.0.0.1", "DNS:localhost")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@dataclass(frozen=True)
class Pki:
    directory: Path
    name: str = "ca"

    @property
    def ca(self) -> Path:
        return self.directory / f"{self.name}.crt"

    @classmethod
    def create(cls, directory: Path, name: str = "ca") -> Pki:
        directory.mkdir(parents=True, exist_ok=True)
        _openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "30",
            "-subj", f"/CN=metaquorum-test-{name}", cwd=directory,
        )  # fmt: skip
        return cls(directory, name)

    def issue(
        self,
        leaf: str,
        sans: tuple[str, ...] = LOOPBACK_SANS,
        days: int = 30,
        out: Path | None = None,
    ) -> Path:
        """Sign a new key for `leaf`; returns the keystore PEM (key then certificate), also
        writing `<leaf>.crt` and `<leaf>.key`. `out` replaces the keystore file atomically."""
        d = self.directory
        (d / f"{leaf}.cnf").write_text(
            f"subjectAltName={','.join(sans)}\nextendedKeyUsage=serverAuth,clientAuth\n"
        )
        _openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{leaf}.key", "-out", f"{leaf}.csr", "-subj", f"/CN={leaf}", cwd=d,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{leaf}.csr", "-CA", self.ca.name, "-CAkey",
            f"{self.name}.key", "-CAcreateserial", "-out", f"{leaf}.crt", "-days", str(days),
            "-extfile", f"{leaf}.cnf", cwd=d,
        )  # fmt: skip
        pem = (d / f"{leaf}.key").read_text() + (d / f"{leaf}.crt").read_text()
        target = out or d / f"{leaf}.pem"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(pem)
        tmp.replace(target)
        return target


def ssl_props(keystore: Path, ca: Path, *, client_auth: str = "required") -> dict[str, str]:
    """A controller listener on mutual TLS, with Kafka's keys."""
    return {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca),
        "ssl.client.auth": client_auth,
    }


def client_props(ca: Path, keystore: Path | None = None) -> str:
    """A `--command-config` file's text (Kafka client names)."""
    lines = [
        "security.protocol=SSL",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={ca}",
    ]
    if keystore is not None:
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={keystore}"]
    return "\n".join(lines) + "\n"

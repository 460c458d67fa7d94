"""Kafka's security settings of the controller listener (net/tls.py): what is accepted with
which meaning, and every refusal as one line naming the setting and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from metaquorum.net.endpoint import ConfigError
from metaquorum.net.tls import TlsContexts, command_config_tls
from metaquorum.net.tls_settings import (
    client_tls_settings,
    listener_security_protocol,
    server_tls_settings,
    versions,
)
from metaquorum.runtime.config import config_from_properties

from tests.support.pki import Pki, ssl_props

BASE = {
    "node.id": "1",
    "process.roles": "controller",
    "controller.listener.names": "CONTROLLER",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "metadata.log.dir": "/tmp/x",
}
PEM = {
    "listener.security.protocol.map": "CONTROLLER:SSL",
    "ssl.keystore.type": "PEM",
    "ssl.keystore.location": "/etc/tls/node.pem",
    "ssl.truststore.type": "PEM",
    "ssl.truststore.location": "/etc/tls/ca.crt",
}


def _refused(props: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as e:
        config_from_properties({**BASE, **props})
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_without_a_map_a_controller_listener_is_plaintext_as_in_kafka() -> None:
    assert config_from_properties(dict(BASE)).tls is None
    assert listener_security_protocol({}, "CONTROLLER") == "PLAINTEXT"
    assert listener_security_protocol({}, "SSL") == "SSL"  # Kafka's default map names it


def test_ssl_listener_reads_kafkas_settings_with_kafkas_defaults() -> None:
    tls = config_from_properties({**BASE, **PEM}).tls
    assert tls is not None
    assert tls.keystore_location == Path("/etc/tls/node.pem")
    assert tls.client_auth == "none"  # Kafka's default
    assert tls.verify_hostname  # ssl.endpoint.identification.algorithm=https by default
    assert tls.protocols == ("TLSv1.2", "TLSv1.3")
    off = config_from_properties({**BASE, **PEM, "ssl.endpoint.identification.algorithm": ""})
    assert off.tls is not None and not off.tls.verify_hostname


def test_listener_prefixed_ssl_settings_win() -> None:
    tls = server_tls_settings(
        {**PEM, "listener.name.controller.ssl.client.auth": "required"}, "CONTROLLER"
    )
    assert tls is not None and tls.client_auth == "required"


@pytest.mark.parametrize(
    ("props", "must_say"),
    [
        ({"listener.security.protocol.map": "CONTROLLER:SASL_SSL"}, ["SASL", "CONTROLLER:SSL"]),
        ({"listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT"}, ["SASL", "PLAINTEXT"]),
        ({"listener.security.protocol.map": "CONTROLLER:TLS"}, ["not a security protocol"]),
        ({"listener.security.protocol.map": "OTHER:SSL"}, ["no entry for listener CONTROLLER"]),
        ({"listener.security.protocol.map": "CONTROLLER"}, ["NAME:PROTOCOL"]),
        ({"ssl.keystore.type": ""}, ["JKS", "ssl.keystore.type=PEM"]),
        ({"ssl.keystore.type": "PKCS12"}, ["PKCS12", "ssl.keystore.type=PEM"]),
        ({"ssl.truststore.type": "JKS"}, ["ssl.truststore.type=PEM"]),
        ({"ssl.keystore.password": "x"}, ["ssl.keystore.password", "ssl.key.password"]),
        ({"ssl.truststore.password": "x"}, ["ssl.truststore.password"]),
        ({"ssl.keystore.location": ""}, ["no certificate", "ssl.keystore.location"]),
        ({"ssl.keystore.key": "-----BEGIN"}, ["keep one"]),
        ({"ssl.client.auth": "always"}, ["ssl.client.auth", "required"]),
        ({"ssl.endpoint.identification.algorithm": "ldaps"}, ["https"]),
        ({"ssl.enabled.protocols": "TLSv1.2,TLSv1.4"}, ["TLSv1.4", "TLSv1.2"]),
        ({"ssl.enabled.protocols": "SSLv3"}, ["SSLv3"]),
        ({"ssl.enabled.protocols": "TLSv1.1"}, ["TLSv1.1"]),
        ({"ssl.protocol": "SSLv3"}, ["ssl.protocol=SSLv3", "TLSv1.3"]),
        ({"ssl.engine.factory.class": "com.example.F"}, ["Java-only", "remove"]),
        ({"ssl.provider": "SunJSSE"}, ["ssl.provider"]),
        ({"ssl.cipher.suites": "TLS_RSA_WITH_NULL_SHA"}, ["TLS_RSA_WITH_NULL_SHA", "IANA"]),
        ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, ["TLS 1.3", "all three"]),
        (
            {
                "ssl.enabled.protocols": "TLSv1.3",
                "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            },
            ["no protocol"],
        ),
    ],
)
def test_refusals_name_the_setting_and_the_fix(props: dict[str, str], must_say: list[str]) -> None:
    msg = _refused({**PEM, **props})
    for text in must_say:
        assert text in msg, msg


def test_only_tls12_suites_means_no_tls13_as_with_java() -> None:
    tls = server_tls_settings(
        {**PEM, "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, "CONTROLLER"
    )
    assert tls is not None
    low, high = versions(tls)
    assert low.name == high.name == "TLSv1_2"


def test_client_settings_use_security_protocol() -> None:
    assert client_tls_settings({}) is None
    assert client_tls_settings({"security.protocol": "SSL"}) is not None
    with pytest.raises(ConfigError, match="SASL"):
        client_tls_settings({"security.protocol": "SASL_SSL"})
    with pytest.raises(ConfigError, match="not a security protocol"):
        client_tls_settings({"security.protocol": "HTTPS"})


def test_missing_or_bad_files_are_refused_when_loaded(tmp_path: Path) -> None:
    tls = server_tls_settings(
        {**PEM, "ssl.keystore.location": str(tmp_path / "none.pem")}, "CONTROLLER"
    )
    assert tls is not None
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.location"):
        TlsContexts(tls)
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    bad = server_tls_settings(
        {**PEM, "ssl.keystore.location": str(tmp_path / "junk.pem")}, "CONTROLLER"
    )
    assert bad is not None
    with pytest.raises(ConfigError, match="cannot load"):
        TlsContexts(bad)


def test_in_config_pem_chain_and_key_load(tmp_path: Path) -> None:
    pki = Pki.create(tmp_path)
    pki.issue("n1")
    props = {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": (tmp_path / "n1.crt").read_text(),
        "ssl.keystore.key": (tmp_path / "n1.key").read_text(),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": pki.ca.read_text(),
    }
    tls = server_tls_settings(props, "CONTROLLER")
    assert tls is not None
    TlsContexts(tls)  # loads, leaves no key file behind (a private temp dir)
    with pytest.raises(ConfigError, match="go together"):
        server_tls_settings({**props, "ssl.keystore.key": ""}, "CONTROLLER")


def test_command_config(tmp_path: Path) -> None:
    f = tmp_path / "client.properties"
    f.write_text("# a comment\nsecurity.protocol=SASL_SSL\n")
    with pytest.raises(ConfigError, match=r"--command-config .*SASL"):
        command_config_tls(f)
    f.write_text("security.protocol=PLAINTEXT\n")
    assert command_config_tls(f) is None
    with pytest.raises(ConfigError, match="cannot read"):
        command_config_tls(tmp_path / "missing")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "metaquorum.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _write(tmp_path: Path, extra: dict[str, str]) -> Path:
    cfg = tmp_path / "server.properties"
    props = {**BASE, "metadata.log.dir": str(tmp_path / "data"), **extra}
    cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return cfg


def test_cli_commands_taking_a_config_refuse_sasl(tmp_path: Path) -> None:
    cfg = _write(tmp_path, {"listener.security.protocol.map": "CONTROLLER:SASL_SSL"})
    for args in (
        ("storage", "format", "--config", str(cfg), "--cluster-id", "J8aAPcfLQt2bqs1JT_rMgQ"),
        ("storage", "info", "--config", str(cfg)),
        ("server", "start", "--config", str(cfg)),
    ):
        r = _cli(*args)
        assert r.returncode == 1, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and "SASL" in r.stderr, (args, r.stderr)
    assert not (tmp_path / "data").exists()  # format wrote nothing


def test_cli_server_start_refuses_a_jks_keystore(tmp_path: Path) -> None:
    cfg = _write(
        tmp_path,
        {
            "listener.security.protocol.map": "CONTROLLER:SSL",
            "ssl.keystore.location": "/etc/tls/node.jks",
        },
    )
    r = _cli("server", "start", "--config", str(cfg))
    assert r.returncode == 1 and "ssl.keystore.type=PEM" in r.stderr


def test_cli_quorum_command_config_refusal(tmp_path: Path) -> None:
    f = tmp_path / "client.properties"
    f.write_text("security.protocol=SASL_PLAINTEXT\n")
    r = _cli(
        "quorum", "--bootstrap-controller", "127.0.0.1:1", "--command-config", str(f),
        "describe", "--status",
    )  # fmt: skip
    assert r.returncode == 1 and "SASL" in r.stderr and r.stderr.count("\n") == 1


def test_ssl_props_helper_is_accepted(tmp_path: Path) -> None:
    pki = Pki.create(tmp_path)
    ks = pki.issue("n1")
    cfg = config_from_properties({**BASE, **ssl_props(ks, pki.ca)})
    assert cfg.tls is not None and cfg.tls.client_auth == "required"
    TlsContexts(cfg.tls)


def test_http_snapshot_endpoint_flag() -> None:
    assert not config_from_properties(dict(BASE)).http_snapshot_enabled
    on = {**BASE, "metaquorum.http.snapshot.enable": "true"}
    assert config_from_properties(on).http_snapshot_enabled
    with pytest.raises(ConfigError, match=r"metaquorum\.http\.snapshot\.enable=true or false"):
        config_from_properties({**BASE, "metaquorum.http.snapshot.enable": "yes"})


def test_https_on_the_http_listener_needs_the_controller_listener_on_ssl() -> None:
    with pytest.raises(ConfigError, match=r"metaquorum\.http\.ssl\.enable=true .* PLAINTEXT"):
        config_from_properties({**BASE, "metaquorum.http.ssl.enable": "true"})
    assert config_from_properties({**BASE, **PEM}).http_tls is None

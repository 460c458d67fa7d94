"""The Kafka-framed server and client over TLS in one process, on asyncio's loop and on uvloop
(the node's): mutual TLS serves requests; no client certificate, an untrusted one, a plaintext
client, an expired or wrong-host server certificate are refused at the handshake with the reason
logged; a certificate rotated on disk is served to new connections."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import uvloop
from metaquorum.net import tls as tls_mod
from metaquorum.net.connection import KafkaConnection, TlsError
from metaquorum.net.tls import TlsContexts, refused_handshakes
from metaquorum.net.tls_settings import server_tls_settings
from metaquorum.net.wire import InboundRequest, UnsupportedApiVersions, encode_response
from metaquorum.protocol.messages import ApiVersionsRequestData, ApiVersionsResponseData
from metaquorum.runtime.apis import api_versions_response
from metaquorum.runtime.server import KafkaServer

from tests.support.pki import Pki, ssl_props

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


def _run(loop: str, coro: Coroutine[Any, Any, None]) -> None:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        runner.run(coro)


def _contexts(keystore: Path, ca: Path, **kw: str) -> TlsContexts:
    settings = server_tls_settings({**ssl_props(keystore, ca), **kw}, "CONTROLLER")
    assert settings is not None
    return TlsContexts(settings)


async def _server(tls: TlsContexts) -> KafkaServer:
    async def handler(req: InboundRequest | UnsupportedApiVersions, conn: int) -> bytes:
        return encode_response(18, 3, req.correlation_id, api_versions_response(3))

    server = KafkaServer("127.0.0.1", 0, handler, tls=tls.server())
    await server.start()
    return server


async def _ask(conn: KafkaConnection) -> None:
    try:
        r = await conn.request(18, 3, ApiVersionsRequestData(), 5)
        assert isinstance(r, ApiVersionsResponseData) and r.error_code == 0
    finally:
        await conn.close()


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki.create(tmp_path / "pki")


@pytest.mark.parametrize("loop", LOOPS)
def test_mutual_tls_serves_requests(loop: str, pki: Pki) -> None:
    server_tls = _contexts(pki.issue("server"), pki.ca)
    client_tls = _contexts(pki.issue("client"), pki.ca)

    refused_before = refused_handshakes()  # process-wide: count this test's own

    async def go() -> None:
        server = await _server(server_tls)
        try:
            await _ask(KafkaConnection("127.0.0.1", server.port, tls=client_tls.client))
            await _ask(KafkaConnection("localhost", server.port, tls=client_tls.client))
            assert refused_handshakes() == refused_before
        finally:
            await server.stop()

    _run(loop, go())


@pytest.mark.parametrize("loop", LOOPS)
def test_client_without_trusted_certificate_is_refused_and_logged(
    loop: str, pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server_tls = _contexts(pki.issue("server"), pki.ca)
    stranger = Pki.create(tmp_path / "other", "other-ca")
    untrusted = _contexts(stranger.issue("intruder"), pki.ca)  # trusts us, we do not trust it
    anonymous = ssl.create_default_context(cafile=str(pki.ca))  # no client certificate

    refused_before = refused_handshakes()

    async def go() -> None:
        server = await _server(server_tls)
        try:
            for provider in (untrusted.client, lambda: anonymous):
                conn = KafkaConnection("127.0.0.1", server.port, tls=provider)
                with pytest.raises(TlsError, match="refused our client certificate"):
                    await _ask(conn)
            # plaintext: the server reads a ClientHello that is not one
            conn = KafkaConnection("127.0.0.1", server.port, connect_timeout_s=2)
            with pytest.raises((ConnectionError, TimeoutError)):
                await _ask(conn)
            for _ in range(100):
                if refused_handshakes() - refused_before >= 3:
                    break
                await asyncio.sleep(0.02)
            assert refused_handshakes() - refused_before == 3
        finally:
            await server.stop()

    with caplog.at_level(logging.WARNING, logger="metaquorum.tls"):
        _run(loop, go())
    lines = [r.getMessage() for r in caplog.records if r.name == "metaquorum.tls"]
    assert len(lines) == 3, lines
    assert all(x.startswith("refused a TLS connection at the handshake: ") for x in lines)
    reasons = " | ".join(lines)
    assert "client certificate not trusted (unable to get local issuer" in reasons, reasons
    assert "the client sent no certificate (ssl.client.auth=required)" in reasons, reasons
    assert "not a TLS client (plaintext?)" in reasons, reasons


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    ("sans", "days", "reason"),
    [
        (("IP:127.0.0.1", "DNS:localhost"), -1, "certificate has expired"),
        (("DNS:elsewhere.example",), 30, "mismatch"),
    ],
)
def test_expired_or_wrong_host_server_certificate_is_refused(
    loop: str, pki: Pki, sans: tuple[str, ...], days: int, reason: str
) -> None:
    server_tls = _contexts(pki.issue("server", sans=sans, days=days), pki.ca)
    client_tls = _contexts(pki.issue("client"), pki.ca)

    async def go() -> None:
        server = await _server(server_tls)
        try:
            conn = KafkaConnection("127.0.0.1", server.port, tls=client_tls.client)
            with pytest.raises(TlsError) as e:
                await _ask(conn)
            assert reason in str(e.value) and f"127.0.0.1:{server.port}" in str(e.value)
        finally:
            await server.stop()

    _run(loop, go())


def test_wrong_host_is_accepted_when_endpoint_identification_is_off(pki: Pki) -> None:
    server_tls = _contexts(pki.issue("server", sans=("DNS:elsewhere.example",)), pki.ca)
    client_tls = _contexts(
        pki.issue("client"), pki.ca, **{"ssl.endpoint.identification.algorithm": ""}
    )

    async def go() -> None:
        server = await _server(server_tls)
        try:
            await _ask(KafkaConnection("127.0.0.1", server.port, tls=client_tls.client))
        finally:
            await server.stop()

    _run("uvloop", go())


@pytest.mark.parametrize("loop", LOOPS)
def test_rotated_certificate_is_served_to_new_connections(
    loop: str, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tls_mod, "RELOAD_CHECK_S", 0.0)
    keystore = pki.issue("server")
    server_tls = _contexts(keystore, pki.ca)
    client_tls = _contexts(pki.issue("client"), pki.ca)

    async def serial(port: int) -> int:
        _reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_tls.client(), server_hostname="127.0.0.1"
        )
        sslobj = writer.get_extra_info("ssl_object")
        der = sslobj.getpeercert(binary_form=True)
        writer.close()
        return hash(der)

    async def go() -> None:
        server = await _server(server_tls)
        try:
            before = await serial(server.port)
            kept = KafkaConnection("127.0.0.1", server.port, tls=client_tls.client)
            await kept.connect()
            pki.issue("server-next", out=keystore)  # the Secret's file replaced
            after = await serial(server.port)
            assert after != before and server_tls.reloads == 1
            # the connection opened before the rotation still serves
            r = await kept.request(18, 3, ApiVersionsRequestData(), 5)
            assert r.error_code == 0
            await kept.close()
            # a broken file does not replace working certificates
            keystore.write_text("garbage\n")
            assert await serial(server.port) == after and server_tls.reloads == 1
        finally:
            await server.stop()

    _run(loop, go())


def test_admin_client_fails_at_once_on_an_untrusted_server_certificate(
    pki: Pki, tmp_path: Path
) -> None:
    from metaquorum.admin.client import AdminClient, AdminError, RetriableAdminError
    from metaquorum.net.endpoint import Endpoint

    server_tls = _contexts(pki.issue("server"), pki.ca)
    other = Pki.create(tmp_path / "other", "other-ca")
    client_tls = _contexts(other.issue("client"), other.ca)  # trusts another CA only

    async def go() -> None:
        server = await _server(server_tls)
        admin = AdminClient(
            [Endpoint("127.0.0.1", server.port)], timeout_s=20, tls=client_tls.client
        )
        try:
            started = asyncio.get_running_loop().time()
            with pytest.raises(AdminError) as e:
                await admin.describe_cluster()
            assert not isinstance(e.value, RetriableAdminError)
            assert "failed: self-signed certificate in certificate chain" in str(e.value)
            assert "--command-config" in str(e.value)
            assert asyncio.get_running_loop().time() - started < 5  # not retried for 20 s
        finally:
            await admin.close()
            await server.stop()

    _run("uvloop", go())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_truststore_extended_on_disk_admits_the_new_ca_without_restart(
    loop: str, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tls_mod, "RELOAD_CHECK_S", 0.0)
    trust = tmp_path / "trust.crt"
    trust.write_text(pki.ca.read_text())
    server_tls = _contexts(pki.issue("server"), trust)
    newer = Pki.create(tmp_path / "newer", "newer-ca")
    newcomer = _contexts(newer.issue("newcomer"), pki.ca)

    async def go() -> None:
        server = await _server(server_tls)
        try:
            with pytest.raises(TlsError):
                await _ask(KafkaConnection("127.0.0.1", server.port, tls=newcomer.client))
            trust.write_text(
                pki.ca.read_text() + newer.ca.read_text()
            )  # CA bundle, as in a CA rotation
            await _ask(KafkaConnection("127.0.0.1", server.port, tls=newcomer.client))
        finally:
            await server.stop()

    _run(loop, go())


def test_a_stalled_handshake_is_closed_after_the_frame_timeout(pki: Pki) -> None:
    server_tls = _contexts(pki.issue("server"), pki.ca)

    async def go() -> None:
        async def handler(req: InboundRequest | UnsupportedApiVersions, conn: int) -> bytes:
            raise AssertionError("no request can arrive")

        server = KafkaServer("127.0.0.1", 0, handler, frame_timeout_s=0.5, tls=server_tls.server())
        await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            started = asyncio.get_running_loop().time()
            assert await asyncio.wait_for(reader.read(), 5) == b""  # closed, nothing sent
            assert asyncio.get_running_loop().time() - started < 3
            writer.close()
        finally:
            await server.stop()

    _run("uvloop", go())

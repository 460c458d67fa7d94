"""The operator's TLS client from the pods' Secret (operator/metaquorum_operator/tls_client.py):
the context it builds talks to a node on mutual TLS; a Secret missing a part is refused."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
from metaquorum.admin.client import AdminClient
from metaquorum.net.endpoint import ConfigError, Endpoint
from metaquorum.net.tls import TlsContexts
from metaquorum.net.tls_settings import server_tls_settings
from metaquorum.net.wire import InboundRequest, UnsupportedApiVersions, encode_response
from metaquorum.runtime.apis import describe_cluster_response
from metaquorum.runtime.server import KafkaServer
from metaquorum_operator.tls_client import client_tls_from_secret

from tests.support.pki import Pki, ssl_props


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


@pytest.mark.parametrize("layout", ["combined", "kubernetes.io/tls"])
def test_secret_gives_a_client_that_passes_mutual_tls(tmp_path: Path, layout: str) -> None:
    pki = Pki.create(tmp_path)
    node = pki.issue("node")
    pki.issue("pod")
    data = {"ca.crt": _b64(pki.ca)}
    if layout == "combined":
        data["tls-combined.pem"] = base64.b64encode(
            (tmp_path / "pod.crt").read_bytes() + (tmp_path / "pod.key").read_bytes()
        ).decode()
    else:
        data |= {"tls.crt": _b64(tmp_path / "pod.crt"), "tls.key": _b64(tmp_path / "pod.key")}
    tls = client_tls_from_secret(data, "q-tls")
    server_settings = server_tls_settings(ssl_props(node, pki.ca), "CONTROLLER")
    assert server_settings is not None

    async def handler(req: InboundRequest | UnsupportedApiVersions, conn: int) -> bytes:
        assert isinstance(req, InboundRequest)
        body = describe_cluster_response(
            req.message, req.api_version, cluster_id="c", leader_id=1, controllers={}
        )
        return encode_response(req.api_key, req.api_version, req.correlation_id, body)

    async def go() -> None:
        server = KafkaServer("127.0.0.1", 0, handler, tls=TlsContexts(server_settings).server())
        await server.start()
        admin = AdminClient([Endpoint("127.0.0.1", server.port)], timeout_s=5, tls=tls)
        try:
            cluster = await admin.describe_cluster()
            assert cluster.cluster_id == "c"
        finally:
            await admin.close()
            await server.stop()

    asyncio.run(go())


def test_incomplete_secrets_are_refused(tmp_path: Path) -> None:
    pki = Pki.create(tmp_path)
    pki.issue("pod")
    with pytest.raises(ConfigError, match=r"has no ca\.crt"):
        client_tls_from_secret({"tls.crt": _b64(tmp_path / "pod.crt")}, "s")
    with pytest.raises(ConfigError, match=r"neither tls-combined\.pem nor tls\.crt"):
        client_tls_from_secret({"ca.crt": _b64(pki.ca)}, "s")
    with pytest.raises(ConfigError, match="holds no private key"):
        client_tls_from_secret({"ca.crt": _b64(pki.ca), "tls-combined.pem": _b64(pki.ca)}, "s")
    with pytest.raises(ConfigError, match="not base64"):
        client_tls_from_secret({"ca.crt": "***"}, "s")

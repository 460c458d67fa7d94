"""The operator's TLS client from the pods' Secret (operator/metaquorum_operator/tls_client.py):
the context it builds talks to a node on mutual TLS; a Secret missing a part is refused; the
Secret is read each reconcile and the context rebuilt when it changes; AdminQuorum connects with
TLS exactly for a TLS quorum; status.tls says what the listener speaks."""

from __future__ import annotations

import asyncio
import base64
import ssl
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from metaquorum.admin.client import AdminClient
from metaquorum.net.endpoint import ConfigError, Endpoint
from metaquorum.net.tls import TlsContexts
from metaquorum.net.tls_settings import server_tls_settings
from metaquorum.net.wire import InboundRequest, UnsupportedApiVersions, encode_response
from metaquorum.runtime.apis import describe_cluster_response
from metaquorum.runtime.server import KafkaServer
from metaquorum_operator.observed import VoterKey
from metaquorum_operator.tls_client import SecretTls, client_tls_from_secret, tls_status

from tests.support.pki import Pki, ssl_props


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


@pytest.mark.parametrize("read_only_tmp", [False, True])
@pytest.mark.parametrize("layout", ["combined", "kubernetes.io/tls"])
def test_secret_gives_a_client_that_passes_mutual_tls(
    tmp_path: Path, layout: str, read_only_tmp: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if read_only_tmp:
        # The chart runs the operator with readOnlyRootFilesystem: no temp file may be needed
        # to load the key and chain held in memory (net/tls.py: a memfd on Linux).
        import tempfile

        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "read-only-root" / "tmp"))
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


class _Secrets:
    """CoreV1Api.read_namespaced_secret over a dict (name -> (resourceVersion, data)), or an
    ApiException status for every read."""

    def __init__(self, secrets: dict[str, tuple[str, dict[str, str]]], status: int = 0) -> None:
        self.secrets, self.status, self.reads = secrets, status, 0

    def read_namespaced_secret(self, name: str, namespace: str) -> Any:
        from kubernetes.client.exceptions import ApiException

        self.reads += 1
        if self.status:
            raise ApiException(status=self.status, reason="Forbidden")
        if name not in self.secrets:
            raise ApiException(status=404, reason="Not Found")
        version, data = self.secrets[name]
        return SimpleNamespace(metadata=SimpleNamespace(resource_version=version), data=data)


def _cert_manager_secret(tmp_path: Path) -> dict[str, str]:
    """What a cert-manager Certificate with additionalOutputFormats CombinedPEM writes."""
    pki = Pki.create(tmp_path)
    combined = pki.issue("pod")
    return {
        "ca.crt": _b64(pki.ca),
        "tls.crt": _b64(tmp_path / "pod.crt"),
        "tls.key": _b64(tmp_path / "pod.key"),
        "tls-combined.pem": _b64(combined),
    }


def test_secret_tls_reads_the_secret_and_rebuilds_only_when_it_changes(tmp_path: Path) -> None:
    data = _cert_manager_secret(tmp_path)
    api = _Secrets({"q-tls": ("1", data)})
    tls = SecretTls(api)
    first = tls.client("ns", "q-tls")
    assert isinstance(first(), ssl.SSLContext)
    assert tls.client("ns", "q-tls") is first and api.reads == 2  # read each time, same context
    api.secrets["q-tls"] = ("2", data)  # cert-manager renewed it
    assert tls.client("ns", "q-tls") is not first


def test_secret_tls_refusals_name_the_secret_and_the_fix(tmp_path: Path) -> None:
    data = _cert_manager_secret(tmp_path)
    with pytest.raises(ConfigError, match=r"Secret ns/nope .* does not exist: create it"):
        SecretTls(_Secrets({})).client("ns", "nope")
    with pytest.raises(
        ConfigError, match=r"may not read Secret ns/s: add ns to .*secretNamespaces"
    ):
        SecretTls(_Secrets({}, status=403)).client("ns", "s")
    plain_tls = {k: v for k, v in data.items() if k != "tls-combined.pem"}
    with pytest.raises(ConfigError, match=r"no tls-combined\.pem: add additionalOutputFormats"):
        SecretTls(_Secrets({"s": ("1", plain_tls)})).client("ns", "s")
    no_ca = {k: v for k, v in data.items() if k != "ca.crt"}
    with pytest.raises(ConfigError, match=r"Secret ns/s has no ca\.crt"):
        SecretTls(_Secrets({"s": ("1", no_ca)})).client("ns", "s")


def test_admin_quorum_connects_with_tls_only_for_a_tls_quorum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metaquorum.admin.client import AdminError
    from metaquorum_operator import observe, planner
    from metaquorum_operator.handlers import AdminQuorum
    from metaquorum_operator.model import Names, Owner, QuorumSpec
    from metaquorum_operator.observed import Observed, ObservedObject, ObservedStatefulSet

    calls: list[Any] = []
    monkeypatch.setattr(
        observe,
        "describe",
        lambda bootstrap, tls=None: calls.append(tls) or observe.Observation(None),
    )
    monkeypatch.setattr(observe, "change", lambda *a, tls=None: calls.append(tls))
    names, owner = Names("q", "ns"), Owner("q", "u")
    sts = ObservedStatefulSet(obj=ObservedObject("h", ("u",)), replicas=3)
    seen = Observed({}, sts, [])
    api = _Secrets({"q-tls": ("1", _cert_manager_secret(tmp_path))})
    quorum = AdminQuorum(SecretTls(api))
    on = planner.Desired(QuorumSpec(tls_enabled=True, tls_secret_name="q-tls"), names, owner)
    off = planner.Desired(QuorumSpec(), names, owner)
    quorum.describe(off, seen)
    quorum.describe(on, seen)
    add = planner.AddVoter(VoterKey(1, "AAAAAAAAAAAAAAAAAAAAAQ"), "test")
    quorum.change(add, on)
    assert calls[0] is None and callable(calls[1]) and calls[2] is calls[1]
    assert isinstance(calls[1](), ssl.SSLContext) and calls[1]().check_hostname
    # the quorum's own ssl.endpoint.identification.algorithm (empty: no host name check)
    lax = QuorumSpec(
        tls_enabled=True,
        tls_secret_name="q-tls",
        config={"ssl.endpoint.identification.algorithm": ""},
    )
    quorum.describe(planner.Desired(lax, names, owner), seen)
    assert not calls[3]().check_hostname and calls[3]().verify_mode == ssl.CERT_REQUIRED
    del calls[3]
    # A missing Secret is the observation's one-line error; a voter change fails with it.
    missing = planner.Desired(QuorumSpec(tls_enabled=True, tls_secret_name="gone"), names, owner)
    obs = quorum.describe(missing, seen)
    assert obs.quorum is None and "Secret ns/gone" in obs.error
    with pytest.raises(AdminError, match="Secret ns/gone"):
        quorum.change(add, missing)
    assert len(calls) == 3  # nothing sent without TLS material


def test_status_says_whether_tls_is_on() -> None:
    from metaquorum_operator.model import QuorumSpec

    assert tls_status(QuorumSpec()) == {"enabled": False, "securityProtocol": "PLAINTEXT"}
    on = QuorumSpec(tls_enabled=True, tls_secret_name="s", config={"ssl.client.auth": "REQUESTED"})
    assert tls_status(on) == {
        "enabled": True,
        "securityProtocol": "SSL",
        "clientAuth": "requested",
        "secretName": "s",
    }

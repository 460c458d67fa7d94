"""A quorum of real node processes on mutual TLS (issue 20's Must show), certificates made here
with `openssl`: it elects, replicates and survives kill -9 of the leader with no acknowledged
append lost; a plaintext client and a node whose client certificate is not trusted are refused
at the handshake while the quorum keeps committing; an expired or wrong-host certificate is
refused with a clear log line; a certificate rotated on disk is served by every node without a
restart and without losing an acknowledgement."""

from __future__ import annotations

import hashlib
import socket
import ssl
import time
from pathlib import Path

import pytest
from metaquorum.net.endpoint import Endpoint
from metaquorum.net.tls import TlsContexts
from metaquorum.net.tls_settings import client_tls_settings
from metaquorum.net.wire import encode_request
from metaquorum.protocol.messages import ApiVersionsRequestData
from metaquorum.runtime.local_quorum import LocalQuorum

from tests.integration.ledger import Ledger
from tests.integration.quorum_fixture import FAST, our_cli, running_quorum, wait_for
from tests.support.pki import Pki, client_props, ssl_props

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _client_tls(pki: Pki) -> TlsContexts:
    props = dict(
        line.split("=", 1) for line in client_props(pki.ca, pki.issue("client")).splitlines()
    )
    settings = client_tls_settings(props)
    assert settings is not None
    return TlsContexts(settings)


def _log(q: LocalQuorum, nid: int) -> str:
    path = q.nodes[nid].log_path
    return path.read_text(errors="replace") if path.exists() else ""


def _served_cert(port: int, ctx: ssl.SSLContext) -> str:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return hashlib.sha256(der).hexdigest()


def _plaintext_probe(port: int) -> bytes:
    """An ApiVersions request in clear: a TLS listener must answer nothing and close."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(encode_request(18, 3, 1, ApiVersionsRequestData(), "plain"))
        s.settimeout(5)
        try:
            return s.recv(4096)
        except (ConnectionResetError, TimeoutError):
            return b""


def _endpoints(q: LocalQuorum) -> list[Endpoint]:
    return [Endpoint("127.0.0.1", q.nodes[i].port) for i in q.voter_ids]


def test_mutual_tls_quorum_elects_replicates_and_survives_kill_of_the_leader(
    tmp_path: Path,
) -> None:
    pki = Pki.create(tmp_path / "pki")
    extra = {**FAST, **ssl_props(pki.issue("node"), pki.ca)}
    client = _client_tls(pki)
    (tmp_path / "client.properties").write_text(client_props(pki.ca, pki.issue("cli")))
    with running_quorum(tmp_path / "q", extra=extra) as q:
        leader, _ = q.wait_for_leader(30)
        for nid in q.nodes:
            assert "(SSL, client auth required" in _log(q, nid)
        ledger = Ledger(lambda: _endpoints(q), tls=client.client).start()
        try:
            ledger.wait_acked(30)
            q.kill(leader)
            new_leader, _ = q.wait_for_leader(30, exclude={leader})
            ledger.wait_acked(30)
            q.start(leader)
            ledger.wait_acked(20)
        finally:
            ledger.stop()
        result = ledger.check()
        assert result.acked >= 80, result

        # Our CLI: refused in clear, served with Kafka's --command-config.
        boot = q.nodes[new_leader].address
        plain = our_cli(
            "quorum", "--bootstrap-controller", boot, "--timeout", "3", "describe", "--status"
        )
        assert plain.returncode == 1
        ok = our_cli(
            "quorum", "--bootstrap-controller", boot, "--command-config",
            str(tmp_path / "client.properties"), "describe", "--status",
        )  # fmt: skip
        assert ok.returncode == 0 and f"LeaderId:               {new_leader}" in ok.stdout, ok
        appended = our_cli(
            "log", "--bootstrap-controller", boot, "--command-config",
            str(tmp_path / "client.properties"), "append", "over-tls",
        )  # fmt: skip
        assert appended.returncode == 0 and "appended 1 record(s) at offset" in appended.stdout

        # A plaintext client gets no byte of an answer, and the node says why.
        assert _plaintext_probe(q.nodes[new_leader].port) == b""
        wait_for(
            lambda: "not a TLS client (plaintext?)" in _log(q, new_leader),
            10,
            "the plaintext refusal in the log",
        )


def test_node_without_a_trusted_client_certificate_is_refused_and_the_quorum_is_unaffected(
    tmp_path: Path,
) -> None:
    pki = Pki.create(tmp_path / "pki")
    stranger = Pki.create(tmp_path / "other", "other-ca")
    intruder = stranger.issue("intruder")  # trusts our CA: only ours refuses it
    client = _client_tls(pki)
    q = LocalQuorum(
        tmp_path / "q", 3, observers=1, extra={**FAST, **ssl_props(pki.issue("node"), pki.ca)}
    )
    q.write_configs()
    q.format()
    try:
        for nid in q.voter_ids:
            q.start(nid)
        leader, _ = q.wait_for_leader(30)
        ledger = Ledger(lambda: _endpoints(q), tls=client.client).start()
        try:
            ledger.wait_acked(20)
            q.start(4, extra_env={"METAQUORUM_SSL_KEYSTORE_LOCATION": str(intruder)})
            wait_for(
                lambda: "client certificate not trusted" in _log(q, leader),
                20,
                "the leader refusing the intruder's certificate",
            )
            wait_for(lambda: "cannot reach voter" in _log(q, 4), 20, "the intruder's warning")
            ledger.wait_acked(40)  # the quorum keeps committing meanwhile
        finally:
            ledger.stop()
        result = ledger.check()
        leader_hw = (q.nodes[leader].status() or {}).get("high_watermark", -1)
        intruder_hw = (q.nodes[4].status() or {}).get("high_watermark", -1)
        assert leader_hw > result.acked // 2 and intruder_hw <= 0, (leader_hw, intruder_hw)
        assert q.nodes[4].process is not None and q.nodes[4].process.poll() is None
    finally:
        q.stop_all()


@pytest.mark.parametrize(
    ("case", "sans", "days", "client_side", "server_side"),
    [
        (
            "expired",
            ("IP:127.0.0.1", "DNS:localhost"),
            -1,
            "failed: certificate has expired",
            "client certificate not trusted (certificate has expired)",
        ),
        (
            "wrong-host",
            ("DNS:elsewhere.example",),
            30,
            "failed: IP address mismatch, certificate is not valid for '127.0.0.1'",
            None,  # a server does not check its clients' host names (as Kafka)
        ),
    ],
)
def test_expired_or_wrong_host_certificate_is_refused_with_a_clear_log_line(
    tmp_path: Path,
    case: str,
    sans: tuple[str, ...],
    days: int,
    client_side: str,
    server_side: str | None,
) -> None:
    pki = Pki.create(tmp_path / "pki")
    bad = pki.issue(case, sans=sans, days=days)
    q = LocalQuorum(tmp_path / "q", 3, extra={**FAST, **ssl_props(pki.issue("node"), pki.ca)})
    q.write_configs()
    q.format()
    try:
        q.start(1)
        q.start(2)
        q.start(3, extra_env={"METAQUORUM_SSL_KEYSTORE_LOCATION": str(bad)})
        leader, _ = q.wait_for_leader(30, exclude={3})
        line = f"cannot reach voter 3: TLS handshake with 127.0.0.1:{q.nodes[3].port} {client_side}"
        wait_for(lambda: any(line in _log(q, n) for n in (1, 2)), 20, f"a log line with {line!r}")
        if server_side is not None:
            wait_for(
                lambda: any(server_side in _log(q, n) for n in (1, 2)),
                20,
                f"a log line with {server_side!r}",
            )
        assert leader in (1, 2)
    finally:
        q.stop_all()


def test_certificate_rotated_on_disk_is_served_with_no_lost_acknowledgement(
    tmp_path: Path,
) -> None:
    pki = Pki.create(tmp_path / "pki")
    keystore = pki.issue("node")
    client = _client_tls(pki)
    probe = client.client()
    with running_quorum(tmp_path / "q", extra={**FAST, **ssl_props(keystore, pki.ca)}) as q:
        leader, _ = q.wait_for_leader(30)
        before = {nid: _served_cert(n.port, probe) for nid, n in q.nodes.items()}
        assert len(set(before.values())) == 1
        ledger = Ledger(lambda: _endpoints(q), tls=client.client).start()
        try:
            ledger.wait_acked(30)
            pki.issue("node-rotated", out=keystore)  # as a Secret's files are replaced
            rotated_at = time.monotonic()

            def all_serve_the_new_one() -> bool:
                served = {nid: _served_cert(n.port, probe) for nid, n in q.nodes.items()}
                return all(served[nid] != before[nid] for nid in q.nodes)

            wait_for(all_serve_the_new_one, 15, "every node serving the rotated certificate")
            took = time.monotonic() - rotated_at
            for nid in q.nodes:
                assert "TLS certificates reloaded from" in _log(q, nid)
            ledger.wait_acked(30)
            # New peer connections now use the rotated client certificate: kill the leader.
            q.kill(leader)
            q.wait_for_leader(30, exclude={leader})
            ledger.wait_acked(30)
            q.start(leader)
            ledger.wait_acked(20)
        finally:
            ledger.stop()
        result = ledger.check()
        assert result.acked >= 100, result
        print(f"rotation picked up by all nodes in {took:.2f}s; ledger {result}")


def test_dynamic_quorum_forms_by_auto_join_over_mutual_tls(tmp_path: Path) -> None:
    """Issue 15's discovery and auto-join (node 1 --standalone, nodes 2 and 3 find the leader
    through controller.quorum.bootstrap.servers and add themselves) over the TLS raft client."""
    pki = Pki.create(tmp_path / "pki")
    extra = {
        **FAST,
        **ssl_props(pki.issue("node"), pki.ca),
        "controller.quorum.auto.join.enable": "true",
    }
    q = LocalQuorum(tmp_path / "q", 3, extra=extra, standalone=True)
    q.write_configs()
    q.format()
    try:
        q.start_all()

        def three_voters() -> bool:
            found = q.leader()
            if found is None:
                return False
            status = q.nodes[found[0]].status() or {}
            return sum(1 for r in status.get("replicas", []) if r["kind"] == "voter") == 3

        wait_for(three_voters, 60, "three voters after auto-join over TLS")
        for nid in q.nodes:
            assert "(SSL, client auth required" in _log(q, nid)
    finally:
        q.stop_all()

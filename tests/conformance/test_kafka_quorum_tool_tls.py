"""Kafka 4.3.1's own `kafka-metadata-quorum --bootstrap-controller ... --command-config
client.properties describe --status` over mutual TLS against our quorum (issue 20): Java's TLS
stack (PEM keystore and truststore, hostname verification on, TLS 1.3) against Python's, with
certificates made here by `openssl`; the same tool without a client certificate is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conformance.conftest import run_kafka_class
from tests.integration.quorum_fixture import FAST, running_quorum, wait_for_hw_everywhere
from tests.support.pki import Pki, client_props, ssl_props

pytestmark = pytest.mark.conformance

TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"
FAST_CLIENT = "request.timeout.ms=5000\ndefault.api.timeout.ms=10000\n"


def _field(text: str, label: str) -> str:
    line = next(x for x in text.splitlines() if x.startswith(label))
    return line[len(label) :].strip()


def test_kafka_tool_describes_our_quorum_over_mutual_tls(
    tmp_path: Path, kafka_classpath: str
) -> None:
    pki = Pki.create(tmp_path / "pki")
    extra = {**FAST, **ssl_props(pki.issue("node"), pki.ca)}
    mtls = tmp_path / "client.properties"
    mtls.write_text(client_props(pki.ca, pki.issue("kafka-tool")) + FAST_CLIENT)
    no_cert = tmp_path / "no-cert.properties"
    no_cert.write_text(client_props(pki.ca) + FAST_CLIENT)
    with running_quorum(tmp_path / "q", extra=extra) as q:
        leader, epoch = q.wait_for_leader(30)
        wait_for_hw_everywhere(q, 1, 20)
        boot = ",".join(n.address for n in q.nodes.values())

        out = run_kafka_class(
            kafka_classpath,
            TOOL,
            ["--bootstrap-controller", boot, "--command-config", str(mtls), "describe", "--status"],
        ).stdout
        assert _field(out, "ClusterId:") == q.cluster_id
        assert int(_field(out, "LeaderId:")) == leader
        assert int(_field(out, "LeaderEpoch:")) >= epoch
        voters = json.loads(_field(out, "CurrentVoters:"))
        assert sorted(v["id"] for v in voters) == [1, 2, 3]

        refused = run_kafka_class(
            kafka_classpath,
            TOOL,
            [
                "--bootstrap-controller", boot, "--command-config", str(no_cert),
                "describe", "--status",
            ],
            check=False,
        )  # fmt: skip
        assert refused.returncode != 0
        assert "LeaderId:" not in refused.stdout
        # TLS 1.3: Java's side of the handshake completes, so it sees closes until its timeout;
        # our nodes say why.
        logs = "".join(n.log_path.read_text() for n in q.nodes.values())
        assert "the client sent no certificate (ssl.client.auth=required)" in logs

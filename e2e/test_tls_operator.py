"""A MetadataQuorum with spec.tls.enabled runs the real node on mutual TLS (issue 20's e2e).

Certificates made here with `openssl` (tests/support/pki.py: a CA and one pod certificate with a
wildcard SAN for the pods' stable names, usages server + client auth), in the Secret a
cert-manager Certificate with additionalOutputFormats CombinedPEM writes (kubernetes.io/tls:
tls.crt, tls.key, ca.crt, tls-combined.pem). The chart's RBAC grants the operator `get` on
Secrets in this namespace (helm upgrade --set rbac.secretNamespaces). Shown:
- the quorum forms with 3 voters: the operator added voters 1 and 2 and reports the leader, so
  its own DescribeQuorum / AddRaftVoter connection is TLS (the listener speaks nothing else);
- status.tls and the Security column say SSL; the status agrees with DescribeQuorum sent from
  the test over mutual TLS; each node logs its listener as SSL with client auth required;
- a plaintext ApiVersions request to a pod's controller port gets no byte back and the node
  logs the refusal; a TLS client without a certificate is refused at the handshake;
- Kafka 4.3.1's MetadataQuorumCommand with --command-config (mutual TLS, PEM stores) agrees.
A Secret the operator cannot read, or one without tls-combined.pem, is named in the status.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from harness import TIMINGS, Cluster, wait_for
from quorums import SAMPLE, cond, mq, use_pod_names

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from tests.support.pki import Pki, client_props  # noqa: E402

PORT = 9093


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def make_secret(cluster: Cluster, ns: str, pki: Pki) -> Path:
    sans = (f"DNS:*.quorum-headless.{ns}.svc.cluster.local", f"DNS:quorum.{ns}.svc.cluster.local")
    combined = pki.issue("quorum", sans=sans)
    d = pki.directory
    cluster.core.create_namespaced_secret(
        ns,
        {
            "metadata": {"name": "quorum-tls"},
            "type": "kubernetes.io/tls",
            "data": {
                "tls.crt": _b64((d / "quorum.crt").read_bytes()),
                "tls.key": _b64((d / "quorum.key").read_bytes()),
                "ca.crt": _b64(pki.ca.read_bytes()),
                "tls-combined.pem": _b64(combined.read_bytes()),
            },
        },
    )
    return combined


def client_tls(pki: Pki, with_cert: bool = True) -> Any:
    from metaquorum.net.tls import TlsContexts
    from metaquorum.net.tls_settings import client_tls_settings

    text = client_props(pki.ca, pki.issue("tester") if with_cert else None)
    settings = client_tls_settings(dict(line.split("=", 1) for line in text.splitlines()))
    assert settings is not None
    return TlsContexts(settings).client


def describe_tls(ns: str, tls: Any) -> Any:
    from metaquorum.admin.client import AdminClient
    from metaquorum.net.endpoint import Endpoint

    async def go() -> Any:
        eps = [
            Endpoint(f"quorum-{i}.quorum-headless.{ns}.svc.cluster.local", PORT) for i in range(3)
        ]
        admin = AdminClient(eps, timeout_s=5, tls=tls)
        try:
            return await admin.describe_quorum()
        finally:
            await admin.close()

    return asyncio.run(go())


def node_log(cluster: Cluster, ns: str, pod: str) -> str:
    """The node container's log of the pod's current incarnation (the node agent's files)."""
    uid = cluster.core.read_namespaced_pod(pod, ns).metadata.uid
    said = cluster.pod_log(ns, pod, uid)
    assert said is not None, f"no log of {ns}/{pod} ({uid}) on this target"
    return said


def plaintext_probe(ip: str) -> bytes:
    """An ApiVersions v3 request in clear: a TLS listener answers nothing and closes."""
    from metaquorum.net.wire import encode_request
    from metaquorum.protocol.messages import ApiVersionsRequestData

    with socket.create_connection((ip, PORT), timeout=5) as s:
        s.sendall(encode_request(18, 3, 1, ApiVersionsRequestData(), "plain"))
        s.settimeout(10)
        try:
            return s.recv(4096)
        except (ConnectionResetError, TimeoutError):
            return b""


def kafka_describe(cluster: Cluster, ns: str, command_config: Path) -> dict[str, Any]:
    """Kafka's `MetadataQuorumCommand --command-config F describe --status` through the pods'
    stable names (the JVM reads cluster.hosts_file: jdk.net.hosts.file)."""
    if shutil.which("java") is None or cluster.hosts_file is None:
        pytest.skip("Kafka's tool needs java and the pods' names (cluster.hosts_file)")
    root = HERE.parent
    env = {**os.environ, "KAFKA_VERSION": (root / "KAFKA_VERSION").read_text().strip()}
    jars = subprocess.run(
        [str(root / "scripts" / "kafka-jars.sh")], check=True, capture_output=True, text=True,
        env=env,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    boot = ",".join(f"quorum-{i}.quorum-headless.{ns}.svc.cluster.local:{PORT}" for i in range(3))
    out = subprocess.run(
        [
            "java", f"-Djdk.net.hosts.file={cluster.hosts_file}", "-XX:TieredStopAtLevel=1",
            "-cp", f"{jars}/*", "org.apache.kafka.tools.MetadataQuorumCommand",
            "--bootstrap-controller", boot, "--command-config", str(command_config),
            "describe", "--status",
        ],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return {
        "leader": int(fields["LeaderId"]),
        "voters": {v["id"]: v["directoryId"] for v in json.loads(fields["CurrentVoters"])},
    }


def tls_sample(ns: str) -> str:
    import yaml

    body = yaml.safe_load(SAMPLE.read_text())
    body["metadata"]["namespace"] = ns
    body["spec"].update(
        {
            "image": "metaquorum/node:e2e",
            "imagePullPolicy": "Never",
            "tls": {"enabled": True, "secretName": "quorum-tls"},
        }
    )
    return json.dumps(body)


def test_a_tls_quorum_forms_and_refuses_plaintext(
    cluster: Cluster, operator: str, namespace: str, tmp_path: Path
) -> None:
    use_pod_names(cluster)
    ns = namespace
    pki = Pki.create(tmp_path / "pki")
    make_secret(cluster, ns, pki)
    # the chart's own RBAC: a Role granting get on Secrets here
    cluster.helm(
        "upgrade", "metaquorum", str(HERE.parent / "charts" / "metaquorum"), "--namespace",
        operator, "--reuse-values", "--set", f"rbac.secretNamespaces={{{ns}}}",
    )  # fmt: skip
    role = cluster.kubectl("get", "role", "-n", ns, "-o", "json").stdout
    assert '"secrets"' in role
    t0 = time.monotonic()
    cluster.kubectl("apply", "-f", "-", input=tls_sample(ns))

    def running() -> dict[str, Any] | None:
        obj = mq(cluster, ns)
        st = obj.get("status") or {}
        ok = st.get("phase") == "Running" and st.get("voterIds") == "0,1,2"
        return obj if ok and cond(obj, "Available").get("status") == "True" else None

    obj = wait_for(running, 300, "3 voters over TLS, Running, Available")
    TIMINGS["TLS quorum: apply -> 3 voters Running (s)"] = time.monotonic() - t0
    st = obj["status"]
    assert st["tls"] == {
        "enabled": True,
        "securityProtocol": "SSL",
        "clientAuth": "required",
        "secretName": "quorum-tls",
    }
    wide = cluster.kubectl("get", "metadataquorum", "quorum", "-n", ns, "-o", "wide").stdout
    assert "SECURITY" in wide.splitlines()[0] and " SSL " in f" {wide.splitlines()[1]} "
    events = cluster.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=MetadataQuorum"
    ).items
    added = sorted(e.message.split()[2] for e in events if e.reason == "VoterAdded")
    assert added == ["1", "2"]  # AddRaftVoter went over the operator's TLS connection

    # the test's own mutual-TLS DescribeQuorum agrees with the status
    info = wait_for(
        lambda: (
            i
            if (i := describe_tls(ns, client_tls(pki))).leader_id
            == mq(cluster, ns)["status"]["leader"]
            else None
        ),
        30,
        "DescribeQuorum over TLS agreeing with the status",
    )
    live = sorted((v.replica_id, str(v.directory_id)) for v in info.voters)
    assert live == sorted((v["id"], v["directoryId"]) for v in mq(cluster, ns)["status"]["voters"])
    for i in range(3):
        assert "(SSL, client auth required" in node_log(cluster, ns, f"quorum-{i}")
    cm = cluster.core.read_namespaced_config_map("quorum-config", ns)
    assert "listener.security.protocol.map=CONTROLLER:SSL" in cm.data["server.properties"]

    # plaintext: no answer, connection closed, and the node says why
    ip = cluster.core.read_namespaced_pod("quorum-0", ns).status.pod_ip
    assert plaintext_probe(ip) == b""
    wait_for(
        lambda: "not a TLS client (plaintext?)" in node_log(cluster, ns, "quorum-0"),
        15,
        "the node logs the plaintext refusal",
    )
    # a TLS client without a certificate (ssl.client.auth=required) gets no answer either
    from metaquorum.admin.client import AdminError

    with pytest.raises((AdminError, OSError)):
        describe_tls(ns, client_tls(pki, with_cert=False))
    # the quorum is unaffected
    assert describe_tls(ns, client_tls(pki)).leader_id >= 0

    # Kafka 4.3.1's own tool over mutual TLS (Java's TLS stack, PEM stores, host names checked
    # against the pods' wildcard certificate) agrees with the status (last: it needs java).
    props = tmp_path / "client.properties"
    props.write_text(client_props(pki.ca, pki.issue("kafka-tool")))
    kafka = kafka_describe(cluster, ns, props)
    st = mq(cluster, ns)["status"]
    assert kafka["voters"] == {v["id"]: v["directoryId"] for v in st["voters"]}
    assert kafka["leader"] == st["leader"]


def test_a_secret_the_operator_cannot_use_is_named_in_the_status(
    cluster: Cluster, operator: str, namespace: str, tmp_path: Path
) -> None:
    """No RBAC grant for this namespace: the Available condition names the chart value; once
    granted, a Secret without tls-combined.pem (a Certificate without CombinedPEM) is named with
    the fix. Never a plaintext connection instead."""
    ns = namespace
    pki = Pki.create(tmp_path / "pki")
    make_secret(cluster, ns, pki)
    cluster.core.patch_namespaced_secret(
        "quorum-tls", ns, [{"op": "remove", "path": "/data/tls-combined.pem"}]
    )
    cluster.helm(
        "upgrade", "metaquorum", str(HERE.parent / "charts" / "metaquorum"), "--namespace",
        operator, "--reuse-values", "--set-json", "rbac.secretNamespaces=[]",
    )  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=tls_sample(ns))

    def unavailable(phrase: str) -> dict[str, Any] | None:
        c = cond(mq(cluster, ns), "Available")
        ok = c.get("reason") == "QuorumUnreachable" and phrase in c.get("message", "")
        return c if ok else None

    c = wait_for(lambda: unavailable("may not read Secret"), 120, "the RBAC refusal in status")
    assert c["message"] == (
        f"the operator may not read Secret {ns}/quorum-tls: add {ns} to the chart's "
        "rbac.secretNamespaces (or set operator.watchNamespace)"
    )
    cluster.helm(
        "upgrade", "metaquorum", str(HERE.parent / "charts" / "metaquorum"), "--namespace",
        operator, "--reuse-values", "--set", f"rbac.secretNamespaces={{{ns}}}",
    )  # fmt: skip
    c = wait_for(lambda: unavailable("has no tls-combined.pem"), 120, "the missing key in status")
    assert "additionalOutputFormats: [{type: CombinedPEM}]" in c["message"]
    assert mq(cluster, ns)["status"].get("leader") is None

"""Resource builders: the properties the operator relies on, checked on the built manifests."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml
from metaquorum_operator import builders
from metaquorum_operator.model import DATA_DIR, PROBE_FIELDS, Names, Owner, QuorumSpec

NAMES = Names("q", "ns")
OWNER = Owner("q", "uid-1")


def props(text: str) -> dict[str, str]:
    """A minimal java.util.Properties reader (key=value lines, # comments)."""
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k] = v
    return out


def all_objects(spec: QuorumSpec) -> list[dict]:
    return [
        builders.configmap(spec, NAMES, OWNER),
        builders.headless_service(spec, NAMES, OWNER),
        builders.client_service(spec, NAMES, OWNER),
        builders.pod_disruption_budget(spec, NAMES, OWNER),
        builders.statefulset(spec, NAMES, OWNER, 3),
    ]


def test_every_object_is_owned_labelled_and_hashed() -> None:
    for obj in all_objects(QuorumSpec()):
        meta = obj["metadata"]
        assert meta["namespace"] == "ns"
        (ref,) = meta["ownerReferences"]
        assert (ref["uid"], ref["kind"], ref["controller"]) == ("uid-1", "MetadataQuorum", True)
        assert meta["labels"]["app.kubernetes.io/instance"] == "q"
        assert len(meta["annotations"][builders.SPEC_HASH]) == 16


def test_builders_are_deterministic() -> None:
    assert all_objects(QuorumSpec(replicas=5)) == all_objects(QuorumSpec(replicas=5))


def test_statefulset_shape() -> None:
    spec = QuorumSpec(storage_size="3Gi", storage_class_name="fast")
    sts = builders.statefulset(spec, NAMES, OWNER, 2)["spec"]
    assert sts["replicas"] == 2
    assert sts["podManagementPolicy"] == "Parallel"
    assert sts["updateStrategy"] == {"type": "OnDelete"}
    assert sts["serviceName"] == NAMES.headless_service
    (vct,) = sts["volumeClaimTemplates"]
    assert vct["spec"]["resources"]["requests"]["storage"] == "3Gi"
    assert vct["spec"]["storageClassName"] == "fast"
    assert sts["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Delete",
    }
    (c,) = sts["template"]["spec"]["containers"]
    assert c["command"] == ["metaquorum", "server", "start"]
    assert {"name": "data", "mountPath": DATA_DIR} in c["volumeMounts"]
    assert c["readinessProbe"]["httpGet"]["port"] == "http"
    assert sts["selector"]["matchLabels"].items() <= sts["template"]["metadata"]["labels"].items()


def test_statefulset_hash_ignores_replicas_but_not_the_template() -> None:
    h = lambda o: o["metadata"]["annotations"][builders.SPEC_HASH]  # noqa: E731
    base = QuorumSpec()
    assert h(builders.statefulset(base, NAMES, OWNER, 1)) == h(
        builders.statefulset(base, NAMES, OWNER, 5)
    )
    other = dataclasses.replace(base, image="other:2")
    assert h(builders.statefulset(base, NAMES, OWNER, 1)) != h(
        builders.statefulset(other, NAMES, OWNER, 1)
    )


def test_config_changes_change_the_pod_template() -> None:
    a = QuorumSpec()
    b = dataclasses.replace(a, config={"controller.quorum.fetch.timeout.ms": "3000"})
    ta = builders.statefulset(a, NAMES, OWNER, 3)["spec"]["template"]
    tb = builders.statefulset(b, NAMES, OWNER, 3)["spec"]["template"]
    assert ta != tb


def test_server_properties_use_kafka_names_and_the_bootstrap_servers() -> None:
    spec = QuorumSpec(replicas=3, config={"controller.quorum.election.timeout.ms": "500"})
    p = props(builders.configmap(spec, NAMES, OWNER)["data"]["server.properties"])
    assert p["process.roles"] == "controller"
    assert p["controller.listener.names"] == "CONTROLLER"
    assert p["listeners"] == "CONTROLLER://:9093"
    assert p["controller.quorum.election.timeout.ms"] == "500"
    servers = p["controller.quorum.bootstrap.servers"].split(",")
    assert servers == [f"q-{i}.q-headless.ns.svc.cluster.local:9093" for i in range(3)]
    assert "node.id" not in p and "controller.quorum.voters" not in p
    assert p["controller.quorum.auto.join.enable"] == "false"  # the operator adds voters


def test_scaling_changes_the_bootstrap_list_but_restarts_nothing() -> None:
    a, b = QuorumSpec(replicas=3), QuorumSpec(replicas=5)
    assert builders.configmap(a, NAMES, OWNER) != builders.configmap(b, NAMES, OWNER)
    ta = builders.statefulset(a, NAMES, OWNER, 3)["spec"]["template"]
    tb = builders.statefulset(b, NAMES, OWNER, 3)["spec"]["template"]
    assert ta == tb


def test_configmap_carries_the_bootstrap_mode_and_the_tombstones() -> None:
    spec = QuorumSpec()
    new = builders.configmap(spec, NAMES, OWNER)["data"]
    assert new["bootstrap"] == "standalone" and new["removed-directory-ids"] == ""
    formed = builders.configmap(spec, NAMES, OWNER, formed=True, tombstones=frozenset({"B", "A"}))
    assert formed["data"]["bootstrap"] == "join"
    assert formed["data"]["removed-directory-ids"] == "A\nB\n"


def test_tls_adds_the_secret_volume_and_ssl_listener() -> None:
    spec = QuorumSpec(tls_enabled=True, tls_secret_name="certs")
    sts = builders.statefulset(spec, NAMES, OWNER, 3)["spec"]["template"]["spec"]
    assert {"name": "tls", "secret": {"secretName": "certs"}} in sts["volumes"]
    p = props(builders.configmap(spec, NAMES, OWNER)["data"]["server.properties"])
    assert p["listener.security.protocol.map"] == "CONTROLLER:SSL"
    # What the node reads and accepts (net/tls_settings.py): the file plus the container's
    # METAQUORUM_<KEY> env, as runtime/config.load_config merges them: a PEM keystore file in
    # the mounted Secret, mutual TLS. Both containers (format, node) get the same.
    from metaquorum.net.tls_settings import server_tls_settings
    from metaquorum.runtime.config import env_overrides

    mount = next(m for m in sts["containers"][0]["volumeMounts"] if m["name"] == "tls")
    for c in (sts["containers"][0], sts["initContainers"][0]):
        env = {e["name"]: e["value"] for e in c["env"] if "value" in e}
        tls = server_tls_settings({**p, **env_overrides(env)}, "CONTROLLER")
        assert tls is not None and tls.client_auth == "required"
        assert str(tls.keystore_location) == f"{mount['mountPath']}/tls-combined.pem"
        assert str(tls.truststore_location) == f"{mount['mountPath']}/ca.crt"
    # Paths never in the file (the e2e stand-in rewrites mount paths in env, not in files).
    assert not any(k.endswith(".location") for k in p)


def test_plaintext_has_no_tls_env_or_volume() -> None:
    sts = builders.statefulset(QuorumSpec(), NAMES, OWNER, 3)["spec"]["template"]["spec"]
    assert all(v["name"] != "tls" for v in sts["volumes"])
    names = {e["name"] for e in sts["containers"][0]["env"]}
    assert not any(n.startswith("METAQUORUM_SSL_") for n in names)


def test_services_and_pdb() -> None:
    spec = QuorumSpec(controller_port=19093, http_port=18080)
    headless = builders.headless_service(spec, NAMES, OWNER)["spec"]
    assert headless["clusterIP"] == "None" and headless["publishNotReadyAddresses"]
    assert sorted(p["port"] for p in headless["ports"]) == [18080, 19093]
    client = builders.client_service(spec, NAMES, OWNER)["spec"]
    assert client["type"] == "ClusterIP" and client["selector"] == NAMES.selector_labels()
    pdb = builders.pod_disruption_budget(spec, NAMES, OWNER)
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"]["maxUnavailable"] == 1


def test_update_patch_leaves_immutable_fields_and_replicas_alone() -> None:
    desired = builders.statefulset(QuorumSpec(), NAMES, OWNER, 3)
    patch = builders.statefulset_update_patch(desired)
    for key in (*builders.STATEFULSET_IMMUTABLE, "replicas"):
        assert key not in patch["spec"]
    assert patch["spec"]["template"] == desired["spec"]["template"]
    assert patch["metadata"]["annotations"] == desired["metadata"]["annotations"]


def test_per_pod_env_uses_the_nodes_override_names() -> None:
    """The node reads METAQUORUM_<KEY> env as property overrides; its own parser is the oracle."""
    from metaquorum.runtime.config import env_overrides
    from metaquorum_operator.model import MANAGED_KEYS

    spec = QuorumSpec(controller_port=19093, http_port=18080)
    sts = builders.statefulset(spec, NAMES, OWNER, 3)
    (c,) = sts["spec"]["template"]["spec"]["containers"]
    (init,) = sts["spec"]["template"]["spec"]["initContainers"]
    assert init["env"] == c["env"]  # format and start read the same overrides
    env = {e["name"]: e.get("value", "") for e in c["env"]}
    keys = env_overrides(env)
    assert keys["listeners"] == "CONTROLLER://$(POD_IP):19093"
    assert keys["advertised.listeners"] == (
        "CONTROLLER://$(POD_NAME).q-headless.ns.svc.cluster.local:19093"
    )
    assert keys["metaquorum.http.listener"] == "$(POD_IP):18080"
    assert keys["metadata.log.dir"] == "/var/lib/metaquorum/data"
    assert set(keys) <= MANAGED_KEYS
    assert set(keys) == {
        "node.id",
        "listeners",
        "advertised.listeners",
        "metaquorum.http.listener",
        "metadata.log.dir",
    }
    node_id = next(e for e in c["env"] if e["name"] == "METAQUORUM_NODE_ID")
    path = node_id["valueFrom"]["fieldRef"]["fieldPath"]
    assert path == "metadata.labels['apps.kubernetes.io/pod-index']"
    names = [e["name"] for e in c["env"]]
    assert names.index("POD_IP") < names.index("METAQUORUM_LISTENERS")  # $(POD_IP) resolves


def test_only_the_client_service_carries_the_metrics_label() -> None:
    spec = QuorumSpec()
    client = builders.client_service(spec, NAMES, OWNER)["metadata"]["labels"]
    headless = builders.headless_service(spec, NAMES, OWNER)["metadata"]["labels"]
    assert client[builders.METRICS_LABEL] == "true"
    assert builders.METRICS_LABEL not in headless  # each node scraped once


def test_every_key_the_pods_depend_on_is_managed_so_spec_config_cannot_override_it() -> None:
    """`spec.config` is applied last: a key the operator's own behaviour relies on must be one
    the CRD refuses there (a user's `metaquorum.http.resign.enable=false` would make every roll
    wait out the resign bound; `metaquorum.http.ssl.enable=true` would fail the probes)."""
    from metaquorum.runtime.config import HTTP_RESIGN_ENABLE, HTTP_SSL_ENABLE
    from metaquorum_operator.model import MANAGED_KEYS

    props = builders.node_properties(QuorumSpec(), NAMES)
    fixed = {k for k in props if not k.startswith("ssl.")}  # TLS: the CRD checks those
    assert fixed <= MANAGED_KEYS, sorted(fixed - MANAGED_KEYS)
    assert props[HTTP_RESIGN_ENABLE] == "true"
    (c,) = builders.statefulset(QuorumSpec(), NAMES, OWNER, 3)["spec"]["template"]["spec"][
        "containers"
    ]
    probes = [c[p]["httpGet"] for p in ("readinessProbe", "livenessProbe") if p in c]
    assert probes and all(p.get("scheme", "HTTP") == "HTTP" for p in probes)
    assert HTTP_SSL_ENABLE in MANAGED_KEYS


def test_static_voters_are_written_as_controller_quorum_voters_and_restart_the_pods() -> None:
    voters = "0@q-0.q-headless.ns.svc.cluster.local:9093"
    plain = builders.node_properties(QuorumSpec(), NAMES)
    assert builders.STATIC_VOTERS not in plain
    static = QuorumSpec(static_voters=voters)
    assert builders.node_properties(static, NAMES)[builders.STATIC_VOTERS] == voters
    assert f"controller.quorum.voters={voters}\n" in builders.server_properties(static, NAMES)
    assert builders.restart_relevant_config(static, NAMES) != builders.restart_relevant_config(
        QuorumSpec(), NAMES
    )
    assert QuorumSpec.from_spec({"staticVoters": voters}).static_voters == voters
    assert QuorumSpec.from_spec({}).static_voters is None


def test_probe_timings_default_and_are_merged_from_the_spec() -> None:
    """spec.readinessProbe / spec.livenessProbe (Strimzi's names) override the node container's
    probe timings field by field; the endpoints stay the operator's."""
    c = builders.node_container(QuorumSpec(), NAMES)
    assert c["readinessProbe"] == {
        "httpGet": {"path": "/readyz", "port": "http"},
        "periodSeconds": 5,
        "failureThreshold": 3,
    }
    assert c["livenessProbe"] == {
        "httpGet": {"path": "/healthz", "port": "http"},
        "periodSeconds": 10,
        "failureThreshold": 6,
        "initialDelaySeconds": 10,
    }
    spec = QuorumSpec.from_spec(
        {
            "readinessProbe": {"periodSeconds": 1, "successThreshold": 2},
            "livenessProbe": {"timeoutSeconds": 3, "initialDelaySeconds": 0, "httpGet": "x"},
        }
    )
    c = builders.node_container(spec, NAMES)
    assert c["readinessProbe"] == {
        "httpGet": {"path": "/readyz", "port": "http"},
        "periodSeconds": 1,
        "failureThreshold": 3,
        "successThreshold": 2,
    }
    assert c["livenessProbe"] == {
        "httpGet": {"path": "/healthz", "port": "http"},
        "periodSeconds": 10,
        "failureThreshold": 6,
        "initialDelaySeconds": 0,
        "timeoutSeconds": 3,
    }
    # a changed probe is a changed pod template: the StatefulSet's revision, so a roll
    before = builders.statefulset(QuorumSpec(), NAMES, OWNER, 3)["spec"]["template"]
    after = builders.statefulset(spec, NAMES, OWNER, 3)["spec"]["template"]
    assert before != after


def test_the_crd_bounds_every_probe_field_the_operator_reads() -> None:
    """The CRD types each field model.PROBE_FIELDS reads (integers, bounded), readiness only
    with successThreshold (Kubernetes requires 1 for liveness)."""
    root = Path(__file__).resolve().parents[3]
    for crd in ("crds", "charts/metaquorum/crds"):
        doc = yaml.safe_load((root / crd / "metadataquorums.metaquorum.dev.yaml").read_text())
        spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        for probe, fields in (
            ("readinessProbe", set(PROBE_FIELDS)),
            ("livenessProbe", set(PROBE_FIELDS) - {"successThreshold"}),
        ):
            declared = spec["properties"][probe]["properties"]
            assert set(declared) == fields, (crd, probe)
            for name, schema in declared.items():
                assert schema["type"] == "integer" and schema["minimum"] >= 0, (probe, name)
                assert schema["maximum"] > schema["minimum"], (probe, name)

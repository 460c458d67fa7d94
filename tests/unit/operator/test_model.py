"""QuorumSpec defaults and managed keys agree with the CRD (the CRD file is the oracle)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from metaquorum_operator.model import MANAGED_KEYS, Names, OperatorConfig, QuorumSpec

ROOT = Path(__file__).resolve().parents[3]
CRD = ROOT / "crds" / "metadataquorums.metaquorum.dev.yaml"


def crd_spec_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]  # type: ignore[no-any-return]


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """Structural defaulting as the apiserver does it: absent fields get `default`, recursively."""
    if schema.get("type") != "object" or not isinstance(value, dict):
        return value
    out = dict(value)
    for key, sub in (schema.get("properties") or {}).items():
        if key not in out and "default" in sub:
            out[key] = sub["default"]
        if key in out:
            out[key] = apply_defaults(sub, out[key])
    return out


def test_parsing_an_empty_spec_gives_the_crd_defaults() -> None:
    defaulted = apply_defaults(crd_spec_schema(), {})
    assert QuorumSpec.from_spec({}) == QuorumSpec.from_spec(defaulted) == QuorumSpec()


def test_parsed_fields_follow_the_spec() -> None:
    spec = QuorumSpec.from_spec(
        {
            "replicas": 5,
            "image": "x:1",
            "storage": {"size": "2Gi", "storageClassName": "fast", "deleteClaimsOnDelete": True},
            "config": {"controller.quorum.fetch.timeout.ms": 3000},
            "listeners": {"controllerPort": 19093, "httpPort": 18080},
            "tls": {"enabled": True, "secretName": "s"},
        }
    )
    assert (spec.replicas, spec.image, spec.storage_size, spec.storage_class_name) == (
        5,
        "x:1",
        "2Gi",
        "fast",
    )
    assert spec.delete_claims_on_delete and spec.tls_enabled and spec.tls_secret_name == "s"
    assert spec.config == {"controller.quorum.fetch.timeout.ms": "3000"}
    assert (spec.controller_port, spec.http_port) == (19093, 18080)


def test_managed_keys_are_exactly_the_keys_the_crd_refuses() -> None:
    rules = crd_spec_schema()["properties"]["config"]["x-kubernetes-validations"]
    refusing = next(r["rule"] for r in rules if r["rule"].startswith("!self.exists"))
    assert set(re.findall(r"'([a-z.]+)'", refusing)) == MANAGED_KEYS


def test_names_are_derived_from_the_resource_name() -> None:
    n = Names("q", "ns")
    assert n.pod_fqdn(2) == "q-2.q-headless.ns.svc.cluster.local"
    assert n.label_selector() == "app.kubernetes.io/instance=q,app.kubernetes.io/name=metaquorum"
    assert n.selector_labels().items() <= n.labels().items()


def test_operator_config_reads_the_catch_up_settings() -> None:
    assert OperatorConfig.from_env({}).catch_up.hold_ms == 3000
    cfg = OperatorConfig.from_env(
        {"METAQUORUM_CATCH_UP_HOLD_MS": "500", "METAQUORUM_CATCH_UP_MAX_LAG_RECORDS": "7"}
    )
    assert (cfg.catch_up.hold_ms, cfg.catch_up.max_lag_records) == (500, 7)
    with pytest.raises(ValueError, match="non-negative integer"):
        OperatorConfig.from_env({"METAQUORUM_CATCH_UP_MAX_LAG_MS": "soon"})


def test_chart_ships_the_same_crd() -> None:
    chart_copy = ROOT / "charts" / "metaquorum" / "crds" / CRD.name
    assert chart_copy.read_bytes() == CRD.read_bytes()

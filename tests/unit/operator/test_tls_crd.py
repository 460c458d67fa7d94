"""The CRD's TLS rules against the node's own lists (crds/metadataquorums.metaquorum.dev.yaml vs
net/tls_settings.py), so neither drifts: the cipher-suite pattern accepts exactly the suites the
node accepts; status.tls has the fields the operator writes. The apiserver's evaluation of the
rules is e2e/test_tls_crd.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from metaquorum.net.tls_settings import _TLS12_SUITES, _TLS13_SUITES
from metaquorum_operator.model import QuorumSpec
from metaquorum_operator.tls_client import tls_status

CRD = Path(__file__).resolve().parents[3] / "crds" / "metadataquorums.metaquorum.dev.yaml"


def _schema() -> dict[str, Any]:
    doc = yaml.safe_load(CRD.read_text())
    return dict(doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"])


def _cipher_pattern() -> str:
    rules = _schema()["spec"]["properties"]["config"]["x-kubernetes-validations"]
    (rule,) = [r["rule"] for r in rules if "cipher[.]suites$') || self[k].matches(" in r["rule"]]
    found = re.search(r"self\[k\]\.matches\('(.*)'\)\)$", rule)
    assert found is not None
    return found.group(1)


def test_the_cipher_suite_pattern_accepts_exactly_the_nodes_suites() -> None:
    pattern = re.compile(_cipher_pattern())
    suites = sorted(set(_TLS12_SUITES) | _TLS13_SUITES)
    for s in suites:
        assert pattern.fullmatch(s) and pattern.fullmatch(f" {s} , {suites[0]}"), s
    assert pattern.fullmatch("")
    for bad in ("TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_CCM_SHA256", "RC4", "TLS_AES"):
        assert not pattern.fullmatch(bad), bad
        assert not pattern.fullmatch(f"{suites[0]},{bad}"), bad


def test_status_tls_schema_holds_what_the_operator_writes() -> None:
    props = _schema()["status"]["properties"]["tls"]["properties"]
    for spec in (QuorumSpec(), QuorumSpec(tls_enabled=True, tls_secret_name="s")):
        assert set(tls_status(spec)) <= set(props)

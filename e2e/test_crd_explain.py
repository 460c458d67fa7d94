"""`kubectl explain` documents every field of MetadataQuorum.spec, on the real kube-apiserver.

The chart installs the CRD; `kubectl explain metadataquorum.spec --recursive` lists the fields the
apiserver publishes (its OpenAPI v3, what explain reads): exactly the ones the CRD file's schema
declares below spec (a walk of properties and array items). Then `kubectl explain
metadataquorum.spec.<path>` for each of them (four at a time) shows a DESCRIPTION that is not
empty. Map values (additionalProperties) have no path of their own in explain; the unit test
tests/unit/operator/test_crd_docs.py covers them in the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import Cluster

pytestmark = pytest.mark.e2e
CRD = Path(__file__).resolve().parent.parent / "crds" / "metadataquorums.metaquorum.dev.yaml"


def schema_paths(schema: dict[str, Any], prefix: str) -> Iterator[str]:
    """Dotted paths of every property below `schema` (array items walked through)."""
    if "items" in schema:
        schema = schema["items"]
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{name}"
        yield path
        yield from schema_paths(sub, path)


def recursive_fields(text: str) -> set[str]:
    """The dotted paths in `kubectl explain ... --recursive` output (one field a line, nested
    by two spaces per level under FIELDS:)."""
    lines = text.split("FIELDS:", 1)[1].splitlines()
    stack: list[str] = []
    out = set()
    for line in lines:
        m = re.match(r"^( *)([A-Za-z][A-Za-z0-9_-]*)\s+<", line)
        if not m:
            continue
        depth = len(m.group(1)) // 2 - 1
        stack = [*stack[:depth], m.group(2)]
        out.add("spec." + ".".join(stack))
    return out


def description(text: str) -> str:
    """The DESCRIPTION section of `kubectl explain` output ('' when absent or <empty>)."""
    m = re.search(r"^DESCRIPTION:\n(.*?)(?:^[A-Z]+:|\Z)", text, re.S | re.M)
    body = " ".join(m.group(1).split()) if m else ""
    return "" if body == "<empty>" else body


def test_kubectl_explain_shows_a_description_for_every_spec_field(
    cluster: Cluster, operator: str
) -> None:
    crd = yaml.safe_load(CRD.read_text())
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    declared = set(schema_paths(root, "spec"))
    assert "spec.podTemplate.topologySpreadConstraints.labelSelector.matchLabels" in declared

    out = cluster.kubectl("explain", "metadataquorum.spec", "--recursive").stdout
    assert description(out), out[:400]
    published = recursive_fields(out)
    assert published == declared, (sorted(declared - published), sorted(published - declared))

    def explain(path: str) -> tuple[str, str]:
        proc = cluster.kubectl("explain", f"metadataquorum.{path}")
        return path, description(proc.stdout)

    with ThreadPoolExecutor(4) as pool:
        found = dict(pool.map(explain, sorted(declared)))
    undocumented = sorted(p for p, d in found.items() if not d)
    assert undocumented == [], f"{len(undocumented)} spec fields without a description"
    replicas = found["spec.replicas"]
    assert replicas.startswith("Number of controller pods"), replicas

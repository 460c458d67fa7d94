"""Every field of the MetadataQuorum CRD is documented, and its printer columns exist.

`kubectl explain metadataquorum.spec --recursive` shows each property's `description`: this walks
the openAPIV3Schema (properties, array items, map values) and names every property without one.
The printer columns people scan (`kubectl get metadataquorums`) point at status fields the
schema declares.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
CRD = ROOT / "crds" / "metadataquorums.metaquorum.dev.yaml"


def _version() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    assert isinstance(version, dict)
    return version


def undocumented(schema: dict[str, Any], path: str) -> Iterator[str]:
    """The paths of the properties below `schema` that have no description."""
    for name, sub in (schema.get("properties") or {}).items():
        here = f"{path}.{name}"
        if not str(sub.get("description") or "").strip():
            yield here
        yield from undocumented(sub, here)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from undocumented(items, f"{path}[]")
    values = schema.get("additionalProperties")
    if isinstance(values, dict):
        yield from undocumented(values, f"{path}{{}}")


# The apiserver refuses anything but `type: object` on the root metadata schema (structural
# schema rule: "must not specify anything other than name and generateName"); kubectl explain
# shows ObjectMeta's own documentation there.
EXEMPT = ["metadataquorum.metadata"]


def test_every_property_of_the_crd_has_a_description() -> None:
    schema = _version()["schema"]["openAPIV3Schema"]
    missing = [p for p in undocumented(schema, "metadataquorum") if p not in EXEMPT]
    assert missing == [], f"{len(missing)} CRD properties without a description: {missing}"
    assert schema["properties"]["metadata"] == {"type": "object"}


def test_the_walk_finds_an_undocumented_property() -> None:
    schema = {
        "properties": {
            "a": {"description": "x", "properties": {"b": {"type": "string"}}},
            "c": {"description": "y", "items": {"properties": {"d": {"type": "integer"}}}},
        }
    }
    assert list(undocumented(schema, "r")) == ["r.a.b", "r.c[].d"]


def test_printer_columns_show_ready_voters_and_the_operation() -> None:
    version = _version()
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert columns["Ready"]["jsonPath"] == ".status.readyVoters"
    assert columns["Operation"]["jsonPath"] == ".status.operation"
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    for c in version["additionalPrinterColumns"]:
        path = c["jsonPath"]
        if path.startswith(".status."):
            assert path.split(".")[2] in status, f"column {c['name']}: no {path} in the schema"

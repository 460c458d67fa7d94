"""Our schema definitions against Kafka 4.3.1's generated classes (conformance tier).

`tests/support/kafka/SchemaDump.java` walks Kafka's `SCHEMAS` by reflection (every version:
field names, types, nullability, tags, struct names) and prints the JsonConverter JSON of every
default-constructed struct. We compare:
- the per-version layout our DSL implies (tests/support/schema_view.py) with Kafka's, exactly;
- Kafka's JSON of each default instance with our `to_json` of our default instance (defaults,
  key names and key order);
- the non-ignorable fields: Kafka's classes carry the string "Attempted to write a non-default
  <field> at version" exactly for them, read here from the class files in the jar.
A new Kafka version that changes any message shows up here as a failing test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from metaquorum.protocol.json_form import _struct_to_json, dumps, to_json
from metaquorum.protocol.messages import MESSAGES
from metaquorum.protocol.schema import ALL
from metaquorum.protocol.schema.dsl import Field, Message

from tests.support.schema_view import view

pytestmark = pytest.mark.conformance

ROOT = Path(__file__).resolve().parents[3]
DUMP = ROOT / "tests" / "support" / "kafka" / "SchemaDump.java"


def _kafka_class(msg: Message) -> str:
    pkg = (
        "org.apache.kafka.raft.generated"
        if msg.name == "QuorumStateData"
        else ("org.apache.kafka.common.message")
    )
    return f"{pkg}.{msg.class_name}"


@pytest.fixture(scope="module")
def kafka_lib() -> Path:
    if shutil.which("java") is None:
        pytest.fail("java is not installed: the conformance tier needs a JDK 17")
    version = (ROOT / "KAFKA_VERSION").read_text().strip()
    out = subprocess.run(
        [str(ROOT / "scripts" / "kafka-jars.sh")],
        check=True, capture_output=True, text=True, env={**os.environ, "KAFKA_VERSION": version},
    )  # fmt: skip
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def kafka_schemas(kafka_lib: Path) -> dict[str, Any]:
    cmd = ["java", "-Xshare:auto", "-cp", str(kafka_lib / "*"), str(DUMP)]
    cmd += [_kafka_class(m) for m in ALL]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


@pytest.mark.parametrize("msg", ALL, ids=[m.name for m in ALL])
def test_layout_matches_kafka(msg: Message, kafka_schemas: dict[str, Any]) -> None:
    kafka = kafka_schemas[msg.class_name]
    ours = view(msg)
    assert (ours["lowest"], ours["highest"]) == (kafka["lowest"], kafka["highest"])
    for version, fields in kafka["schemas"].items():
        assert ours["schemas"][version] == fields, f"{msg.name} v{version}"


@pytest.mark.parametrize("msg", ALL, ids=[m.name for m in ALL])
def test_defaults_match_kafka(msg: Message, kafka_schemas: dict[str, Any]) -> None:
    cls = MESSAGES[msg.name]
    checked = 0
    for key, kafka_json in kafka_schemas[msg.class_name]["defaults"].items():
        struct, version_text = key.split("@")
        version = int(version_text)
        if isinstance(kafka_json, str) and kafka_json.startswith("ERR"):
            continue  # Kafka cannot write this struct at this version
        if struct == msg.class_name:
            ours = to_json(cls(), version)
        else:
            fields = msg.struct_fields(struct)
            ours = _struct_to_json(msg, cls, fields, getattr(cls, struct)(), version)
        assert dumps(ours) == json.dumps(kafka_json, separators=(",", ":")), key
        checked += 1
    assert checked >= len(list(msg.versions()))


def _non_ignorable_in_jar(jar: Path, class_prefix: str) -> set[str]:
    found: set[str] = set()
    pattern = re.compile(rb"non-default ([A-Za-z0-9]+) at version")
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            base = name.rsplit("/", 1)[-1]
            if not (base == class_prefix + ".class" or base.startswith(class_prefix + "$")):
                continue
            if "JsonConverter" in base:
                continue
            found.update(m.decode() for m in pattern.findall(z.read(name)))
    return found


def _non_ignorable_ours(msg: Message) -> set[str]:
    """Fields absent from some version in which their struct exists, and not ignorable."""
    names: set[str] = set()

    def walk(fields: tuple[Field, ...], versions: set[int]) -> None:
        for fld in fields:
            present = {v for v in versions if v in fld.version_range()}
            if present != versions and not fld.ignorable:
                names.add(fld.json_name)
            if fld.is_struct and present:
                walk(msg.struct_fields(fld.element_type), present)

    walk(msg.fields, set(msg.versions()))
    return names


@pytest.mark.parametrize("msg", ALL, ids=[m.name for m in ALL])
def test_ignorable_flags_match_kafka(msg: Message, kafka_lib: Path) -> None:
    jar_name = "kafka-raft" if msg.name == "QuorumStateData" else "kafka-clients"
    (jar,) = kafka_lib.glob(f"{jar_name}-*.jar")
    assert _non_ignorable_ours(msg) == _non_ignorable_in_jar(jar, msg.class_name)

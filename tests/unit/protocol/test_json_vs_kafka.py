"""Our JSON text and bytes against Kafka 4.3.1's own classes, byte for byte (conformance tier).

One JVM runs `tests/support/kafka/MessageOracle.java`; for drawn values of every message and
version we send our bytes, Kafka parses them, prints its JsonConverter JSON (Jackson's compact
text) and re-encodes. Our `dumps(to_json(...))` must equal Kafka's text exactly (key order,
escapes, number forms) and Kafka's bytes must equal ours. Then Kafka encodes our JSON, and we
must read Kafka's bytes back to the same value.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metaquorum.protocol.json_form import dumps, from_json, to_json
from metaquorum.protocol.messages import MESSAGES

from tests.support.message_strategies import all_message_versions, strategy_for

pytestmark = pytest.mark.conformance

ROOT = Path(__file__).resolve().parents[3]
ORACLE = ROOT / "tests" / "support" / "kafka" / "MessageOracle.java"
PAIRS = all_message_versions()


class Oracle:
    def __init__(self, lib: Path) -> None:
        cmd = ["java", "-Xshare:auto", "-XX:+UseSerialGC", "-cp", str(lib / "*"), str(ORACLE)]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8", bufsize=1,
        )  # fmt: skip

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, "the oracle JVM died"
        return answer.rstrip("\n")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    if shutil.which("java") is None:
        pytest.fail("java is not installed: the conformance tier needs a JDK 17")
    version = (ROOT / "KAFKA_VERSION").read_text().strip()
    out = subprocess.run(
        [str(ROOT / "scripts" / "kafka-jars.sh")],
        check=True, capture_output=True, text=True, env={**os.environ, "KAFKA_VERSION": version},
    )  # fmt: skip
    o = Oracle(Path(out.stdout.strip().splitlines()[-1]))
    yield o
    o.close()


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_json_text_and_bytes_match_kafka(
    name: str, version: int, data: st.DataObject, oracle: Oracle
) -> None:
    cls = MESSAGES[name]
    value = data.draw(strategy_for(name, version, unknown_tags=False))
    ours = value.encode(version)
    answer = oracle.ask(f"B2J {cls.__name__} {version} {ours.hex()}")
    assert not answer.startswith("ERR"), answer
    kafka_json, kafka_hex = answer.split("\t")
    assert dumps(to_json(value, version)) == kafka_json
    assert kafka_hex == ours.hex()
    # Kafka encodes our JSON; we read its bytes back to the JSON's value.
    answer = oracle.ask(f"J2B {cls.__name__} {version} {kafka_json}")
    assert not answer.startswith("ERR"), answer
    kafka_hex2, _ = answer.split("\t")
    back = cls.decode(bytes.fromhex(kafka_hex2), version)
    assert to_json(back, version) == to_json(
        from_json(cls, to_json(value, version), version), version
    )

"""Conformance tier: Apache Kafka's published jars (version pinned in KAFKA_VERSION) as oracles.

Fixtures here resolve the jars once per session through scripts/kafka-jars.sh (cached under
~/.cache/metaquorum/) and run Kafka's own classes in a JVM.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.conformance.oracle_client import (
    DAMAGE_VERDICTS,
    MESSAGE_COVERAGE,
    KafkaOracle,
    build_oracle,
)

ROOT = Path(__file__).resolve().parents[2]


def kafka_version() -> str:
    return (ROOT / "KAFKA_VERSION").read_text().strip()


@pytest.fixture(scope="session")
def kafka_lib() -> Path:
    """Directory holding Kafka's jars and their runtime dependencies."""
    if shutil.which("java") is None:
        pytest.fail(
            "java is not installed: the conformance tier needs a JDK "
            "(apt-get install openjdk-17-jdk-headless)"
        )
    out = subprocess.run(
        [str(ROOT / "scripts" / "kafka-jars.sh")],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "KAFKA_VERSION": kafka_version()},
    )
    lib = Path(out.stdout.strip().splitlines()[-1])
    assert any(lib.glob("kafka-clients-*.jar")), f"no kafka-clients jar in {lib}"
    return lib


@pytest.fixture(scope="session")
def kafka_classpath(kafka_lib: Path) -> str:
    return str(kafka_lib / "*")


def run_kafka_class(
    classpath: str,
    main_class: str,
    args: Sequence[str],
    *,
    timeout: float = 120.0,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's main classes (a JVM per call: ~1.5 s; use sparingly)."""
    cmd = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", classpath, main_class, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture(scope="session")
def kafka_oracle(kafka_lib: Path) -> Iterator[KafkaOracle]:
    """ONE oracle JVM (tests/conformance/oracle/Oracle.java) for the whole session."""
    if shutil.which("javac") is None:
        pytest.fail("javac is not installed: the Kafka oracle needs a JDK 17 (install openjdk-17)")
    oracle = KafkaOracle(build_oracle(kafka_lib), kafka_lib)
    try:
        version = oracle.ping()
        assert version == kafka_version(), f"the oracle runs Kafka {version}, not KAFKA_VERSION"
        yield oracle
    finally:
        oracle.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line: how many message x version pairs (and values) went both ways through Kafka."""
    if MESSAGE_COVERAGE:
        pairs = len(MESSAGE_COVERAGE)
        names = len({name for name, _ in MESSAGE_COVERAGE})
        values = sum(MESSAGE_COVERAGE.values())
        terminalreporter.write_line(
            f"conformance: {pairs} message x version pairs ({names} messages) checked both ways "
            f"against Kafka {kafka_version()}, {values} values, "
            f"min {min(MESSAGE_COVERAGE.values())} per pair"
        )
        few = sorted((n, v, c) for (n, v), c in MESSAGE_COVERAGE.items() if c < 10)
        if few:
            listed = ", ".join(f"{n} v{v} ({c})" for n, v, c in few)
            terminalreporter.write_line(f"conformance: pairs with few distinct values: {listed}")
    if DAMAGE_VERDICTS:
        counts = ", ".join(f"{k}: {n}" for k, n in sorted(DAMAGE_VERDICTS.items()))
        terminalreporter.write_line(f"conformance: damaged message bytes, {counts}")

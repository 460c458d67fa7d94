"""Kafka 4.3.1's own `MetadataQuorumCommand describe --status` against an operator-run quorum:
the oracle the scale and upgrade tests check the MetadataQuorum's status against.

Role: a library of e2e tests (no test here). Invariant: Kafka's tool from the project's cached
jars (scripts/kafka-jars.sh), through the pods' stable names (the JVM reads cluster.hosts_file:
jdk.net.hosts.file); skipped only where java or the names are missing (not on kind).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from harness import Cluster

HERE = Path(__file__).resolve().parent


def kafka_status(cluster: Cluster, ns: str, members: int) -> dict[str, Any]:
    """Kafka 4.3.1's own `MetadataQuorumCommand describe --status` through the pods' stable
    names (the JVM reads cluster.hosts_file: jdk.net.hosts.file)."""
    if shutil.which("java") is None or cluster.hosts_file is None:
        pytest.skip("needs java and the pods' names (cluster.hosts_file; not on kind)")
    root = HERE.parent
    version = (root / "KAFKA_VERSION").read_text().strip()
    jars = (
        subprocess.run(
            [str(root / "scripts" / "kafka-jars.sh")],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "KAFKA_VERSION": version},
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    boot = ",".join(
        f"quorum-{i}.quorum-headless.{ns}.svc.cluster.local:9093" for i in range(members)
    )
    out = subprocess.run(
        [
            "java",
            f"-Djdk.net.hosts.file={cluster.hosts_file}",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            f"{jars}/*",
            "org.apache.kafka.tools.MetadataQuorumCommand",
            "--bootstrap-controller",
            boot,
            "describe",
            "--status",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return {
        "leader": int(fields["LeaderId"]),
        "epoch": int(fields["LeaderEpoch"]),
        "voters": {v["id"]: v["directoryId"] for v in json.loads(fields["CurrentVoters"])},
    }


def agrees_with_status(kafka: dict[str, Any], status: dict[str, Any]) -> bool:
    """Kafka's tool and the MetadataQuorum's status name the same voters (ids and directory
    ids), leader and epoch."""
    voters = {v["id"]: v["directoryId"] for v in status["voters"]}
    return bool(
        kafka["voters"] == voters
        and (kafka["leader"], kafka["epoch"]) == (status["leader"], status["epoch"])
    )

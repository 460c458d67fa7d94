"""The campaign against a real Spark standalone cluster on loopback: a master and two workers
started from the installed pyspark's own launcher (`bin/spark-class`), the same code path a
user's cluster takes (`--master spark://host:port`, executors in their own JVMs).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from metaquorum_pipeline import sparkjob

from tests.pipeline.conftest import run_cli, write_spec

pytestmark = pytest.mark.pipeline

START_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("standalone")
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    env = dict(
        os.environ,
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_JAVA_OPTS=f"-Dlog4j2.configurationFile=file:{sparkjob.LOG4J}",
        SPARK_WORKER_DIR=str(root / "work"),
    )
    master = f"spark://127.0.0.1:{port}"
    commands = [
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(ui)],
        *[["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
           "--memory", "1536m", "--webui-port", str(free_port()), master] for _ in range(2)],
    ]  # fmt: skip
    procs = []
    try:
        for i, cmd in enumerate(commands):
            log = (root / f"daemon-{i}.log").open("w")
            procs.append(
                subprocess.Popen(
                    [spark_class, *cmd],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        alive = 0
        while alive < 2:
            assert time.monotonic() < deadline, f"workers alive: {alive}; logs in {root}"
            assert all(p.poll() is None for p in procs), f"a daemon died; logs in {root}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    alive = int(json.load(r).get("aliveworkers", 0))
            except OSError:
                pass
            time.sleep(0.5)
        yield master
    finally:
        for p in procs:  # each daemon leads its own process group (its executors included)
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_campaign_on_a_standalone_master_with_two_workers(standalone: str, tmp_path: Path) -> None:
    spec_file = write_spec(
        tmp_path / "cluster.yaml",
        name="cluster",
        mixes=["partitions"],
        seeds={"start": 0, "count": 20},
        seeds_per_task=5,
    )
    out = tmp_path / "out"
    done = run_cli(
        "campaign", spec_file, "--out", out, "--master", standalone, "--quiet",
        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.executor.memory=1g",
        env={"SPARK_LOCAL_IP": "127.0.0.1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    agg = json.loads((out / "aggregates.json").read_text())
    assert agg["run"]["master"] == standalone
    assert agg["run"]["executors"] == 2  # one on each worker, in its own JVM
    assert agg["seeds"] == 20 and agg["violating_seeds"] == 0
    assert len(list((out / "records" / "scenario=partitions").glob("*.parquet"))) == 4
    assert "all 20 seeds kept every invariant" in (out / "report.html").read_text()

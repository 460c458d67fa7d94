"""`metaquorum-pipeline logs` over a real metadata log written by our storage layer: several
segments and leader epochs, each epoch opened by its LeaderChange control batch, and a torn
tail. Files are split at batch boundaries into many Spark tasks; every batch is read once and
the per-epoch figures equal what was written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from metaquorum.core.log import leader_change_message
from metaquorum.protocol.control_records import leader_change_batch
from metaquorum.storage.log import LogConfig, MetadataLog
from metaquorum_pipeline import logs, logs_report

pytestmark = pytest.mark.pipeline

# (epoch, leader, records per data batch): epoch 3 never appended (an election without a leader)
EPOCHS = ((1, 1, [3, 5, 2, 7, 1]), (2, 2, [4] * 8), (4, 3, [10, 10, 1]))
T0 = 1_700_000_000_000


def write_log(directory: Path) -> dict[int, dict[str, int]]:
    log = MetadataLog.open(directory, LogConfig(segment_bytes=1500, fsync=False))
    expected: dict[int, dict[str, int]] = {}
    ts = T0
    for epoch, leader, sizes in EPOCHS:
        change = leader_change_message(leader, [1, 2, 3], [leader, 1 + leader % 3])
        first = ts
        log.append_as_leader(leader_change_batch(0, epoch, change, timestamp_ms=ts), epoch)
        for n in sizes:
            ts += 250
            log.append_records_as_leader([b"v" * 40] * n, epoch, ts)
        expected[epoch] = {"leader_id": leader, "batches": 1 + len(sizes),
                           "records": 1 + sum(sizes), "tenure_ms": ts - first}  # fmt: skip
        ts += 1000
    log.flush()
    log.close()
    return expected


def test_log_analytics_per_epoch_with_a_torn_tail(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "node-1"
    expected = write_log(data / "__cluster_metadata-0")
    segments = sorted((data / "__cluster_metadata-0").glob("*.log"))
    assert len(segments) >= 3
    with segments[-1].open("ab") as f:  # a torn tail: a batch prefix promising more bytes
        f.write(b"\x00" * 8 + (500).to_bytes(4, "big") + b"\x01" * 20)

    files = logs.find_files([data])
    assert {label for label, _, _ in files} == {"node-1/__cluster_metadata-0"}
    parts = [s for label, kind, f in files for s in logs.splits(label, kind, f, 300)]
    assert len(parts) > len(segments)  # several tasks per segment
    assert sum(stop - start for *_, start, stop in parts) == sum(p.stat().st_size for p in segments)

    out = tmp_path / "out"
    run = logs.run(spark, [data], out, split_bytes=300)
    assert run["splits"] == len(parts)
    df = spark.read.schema(logs.schema()).parquet(str(out / "batches"))
    agg = logs_report.aggregates(spark, df)

    got = {e["epoch"]: e for e in agg["epochs"]}
    assert sorted(got) == [1, 2, 4]
    for epoch, want in expected.items():
        assert {k: got[epoch][k] for k in want} == want, epoch
        assert got[epoch]["control_batches"] == 1
    starts = [0, expected[1]["records"], expected[1]["records"] + expected[2]["records"]]
    assert [e["first_offset"] for e in agg["epochs"]] == starts  # offsets count records
    [control] = agg["control"]
    assert (control["type"], control["records"]) == ("LEADER_CHANGE", 3)
    [invalid] = agg["invalid"]
    assert invalid["file"] == segments[-1].name and invalid["size"] == 32
    page = logs_report.render(agg, run=run)
    assert '<img alt="epochs" src="data:image/svg+xml;base64,' in page
    assert "LEADER_CHANGE" in page and "not a whole batch" in page

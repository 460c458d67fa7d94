"""Kafka's DumpLogSegments (kafka-tools, KAFKA_VERSION) reads a backup's files — its snapshot
and its rolled segments — and the files `backup restore` leaves (the segments with the new
[KRaftVersion, Voters] batch appended, the bootstrap checkpoint): every batch valid, no
invalid bytes, output line for line equal to our `dump-log`."""

from __future__ import annotations

from pathlib import Path

import pytest
from metaquorum.backup.destinations import LocalDestination
from metaquorum.backup.reform import ListenerAddress
from metaquorum.backup.restore import restore_backup
from metaquorum.storage.dump import dump_file

from tests.conformance.conftest import run_kafka_class
from tests.unit.backup.helpers import make_backup

pytestmark = pytest.mark.conformance
DUMP = "org.apache.kafka.tools.DumpLogSegments"


def _both(classpath: str, files: list[Path]) -> tuple[list[str], list[str]]:
    args = ["--deep-iteration", "--print-data-log", "--files", ",".join(map(str, files))]
    out = run_kafka_class(classpath, DUMP, args).stdout
    theirs = [line for line in out.splitlines() if line and not line.startswith("[")]
    ours: list[str] = []
    for f in files:
        dump_file(f, deep_iteration=True, print_data=True, emit=ours.append)
    return theirs, ours


@pytest.mark.parametrize("snapshot_at", [5, None])
def test_kafka_reads_a_backup_and_its_restore(
    kafka_classpath: str, tmp_path: Path, snapshot_at: int | None
) -> None:
    m = make_backup(tmp_path, snapshot_at=snapshot_at)
    backup_dir = tmp_path / "dest" / "b1"
    restore_backup(
        LocalDestination(tmp_path / "dest", "dest"),
        "b1",
        tmp_path / "restored",
        node_id=4,
        endpoints=[ListenerAddress("CONTROLLER", "127.0.0.1", 19093)],
    )
    part = tmp_path / "restored" / "__cluster_metadata-0"
    files = [backup_dir / f.name for f in m.files]
    files += sorted(part.glob("*.log")) + sorted(part.glob("*.checkpoint"))
    theirs, ours = _both(kafka_classpath, files)
    batches = [x for x in theirs if x.startswith("baseOffset:")]
    assert len(batches) >= 2 * 19 and all(x.endswith("isvalid: true") for x in batches)
    assert not any("invalid bytes" in x for x in theirs)
    assert sum("KRaftVersion" in x for x in theirs) >= 2  # the backup's and the restore's
    assert ours == theirs

"""A small campaign on local[2] with Spark started for real (issue 17's "must show").

The command runs in a fresh process as a user runs it; the test then reads its Parquet with its
own Spark session and checks the schema, that the records equal a plain in-process loop over
the same seeds, that the Spark SQL aggregates equal the same numbers computed in Python (and
the `--no-spark` path's), that the report holds the plots and tables, and that a re-run with
more seeds runs only the new ones.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from metaquorum_pipeline import aggregate, records, sparkjob, spec

from tests.pipeline.conftest import run_cli, write_spec

pytestmark = pytest.mark.pipeline

SPEC = {
    "name": "tier",
    "mixes": ["calm", "chaos"],
    "seeds": {"start": 0, "count": 12},
    "grid": {"controller.quorum.election.timeout.ms": [500, 1000]},
    "seeds_per_task": 5,
}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("campaign")
    spec_file = write_spec(root / "tier.yaml", **SPEC)
    out = root / "out"
    done = run_cli("campaign", spec_file, "--out", out, "--master", "local[2]", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "48 seeds (48 run now, 0 already there), 0 violating" in done.stderr
    return out


def plain_loop() -> list[records.Record]:
    sp = spec.parse(SPEC)
    return list(records.run_tasks(spec.tasks(sp)))


def test_parquet_schema_and_partitions(campaign: Path, spark: Any) -> None:
    parts = sorted(p.name for p in (campaign / "records").glob("scenario=*"))
    assert parts == [
        "scenario=calm+election.timeout.ms%3D1000",
        "scenario=calm+election.timeout.ms%3D500",
        "scenario=chaos+election.timeout.ms%3D1000",
        "scenario=chaos+election.timeout.ms%3D500",
    ]
    df = spark.read.parquet(str(campaign / "records"))  # the schema as found on disk
    found = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert found == {name: kind for name, kind, _ in records.COLUMNS}
    assert df.count() == 48


def test_spark_records_equal_a_plain_loop(campaign: Path, spark: Any) -> None:
    cells = [c.scenario for c in spec.parse(SPEC).cells]
    rows = sparkjob.load(spark, campaign, cells).collect()
    from_spark = sorted(
        (tuple(r[n] for n in records.NAMES) for r in rows), key=lambda r: (r[-1], r[1])
    )
    loop = sorted(plain_loop(), key=lambda r: (r[-1], r[1]))
    assert len(from_spark) == 48
    assert from_spark == loop
    assert all(r[records.NAMES.index("violations")] == 0 for r in loop)


def test_spark_sql_aggregates_equal_python_and_the_no_spark_path(
    campaign: Path, spark: Any, tmp_path: Path
) -> None:
    written = json.loads((campaign / "aggregates.json").read_text())
    expected = aggregate.python_aggregates(plain_loop())
    assert_same(written["cells"], expected["cells"])
    assert written["violating_seeds"] == expected["violating_seeds"] == 0
    assert written["run"]["seeds_run"] == 48 and written["run"]["engine"] == "spark"
    assert [r["seeds_run"] for r in written["runs"]] == [48]  # the history of runs into DIR
    cell = next(c for c in written["cells"] if c["scenario"] == "chaos+election.timeout.ms=500")
    assert cell["seeds"] == 12 and cell["election_timeout_ms"] == 500
    p50, p90, p99, top = cell["commit_latency_ms"]
    assert 0 < p50 <= p90 <= p99 <= top
    assert cell["leader_changes_mean"] >= 1 and cell["first_leader_ms"][0] > 0
    # The same spec on the plain process pool gives the same aggregates.
    spec_file = write_spec(tmp_path / "tier.yaml", **SPEC)
    pool = run_cli(
        "campaign", spec_file, "--out", tmp_path / "pool", "--no-spark", "--workers", "2"
    )
    assert pool.returncode == 0, pool.stderr
    assert_same(
        json.loads((tmp_path / "pool" / "aggregates.json").read_text())["cells"], expected["cells"]
    )


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [c["scenario"] for c in got] == [c["scenario"] for c in want]
    for g, w in zip(got, want, strict=True):
        assert set(g) == set(w), g["scenario"]
        for key, value in w.items():
            if isinstance(value, (str, dict)) or value is None:
                assert g[key] == value, (g["scenario"], key)
            else:
                assert g[key] == pytest.approx(value, rel=1e-9), (g["scenario"], key)


def test_report_has_plots_tables_and_no_outside_references(campaign: Path) -> None:
    page = (campaign / "report.html").read_text()
    assert "all 48 seeds kept every invariant" in page
    assert "<h2>Runs into this directory</h2>" in page
    images = re.findall(
        r'<img alt="plot \d+" src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page
    )
    assert len(images) == 5 and all(len(i) > 5000 for i in images)
    for cell in ("calm+election.timeout.ms=500", "chaos+election.timeout.ms=1000"):
        assert f"<td class=l>{cell}</td>" in page
    assert not re.search(r'(src|href)="(?!data:)', page)  # self-contained
    # Tuning: one group per mix (the grid varies the election timeout), each with its plot.
    for mix in ("calm", "chaos"):
        assert re.search(rf"<h3>{mix}: recommended <code>{mix}\+election\.timeout\.ms=", page)
        assert f'<img alt="tuning {mix}" src="data:image/svg+xml;base64,' in page


def test_a_rerun_with_more_seeds_runs_only_the_new_ones(campaign: Path, spark: Any) -> None:
    wider = spec.parse({**SPEC, "seeds": {"start": 0, "count": 15}})
    info = sparkjob.run(spark, wider, campaign, progress=False)
    assert (info["seeds_run"], info["seeds_skipped"]) == (12, 48)
    df = sparkjob.load(spark, campaign, [c.scenario for c in wider.cells])
    assert df.count() == 60 == df.select("scenario", "seed").distinct().count()
    # The narrower spec's report reads only its own seeds back.
    assert sparkjob.load(spark, campaign, [c.scenario for c in wider.cells], (0, 12)).count() == 48
    again = sparkjob.run(spark, wider, campaign, progress=False)
    assert (again["seeds_run"], again["tasks"]) == (0, 0)

"""The node reports its software version (runtime/version.py) on /status and /metrics: the
package version, or METAQUORUM_VERSION_OVERRIDE (how e2e makes a second image of this code)."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import metaquorum
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum.runtime.version import software_version
from metaquorum.storage.meta_properties import read_meta_properties

from tests.integration.quorum_fixture import FAST, wait_for


def test_software_version_is_the_package_version_unless_overridden() -> None:
    assert software_version({}) == metaquorum.__version__
    assert software_version({"METAQUORUM_VERSION_OVERRIDE": " 0.2.0 "}) == "0.2.0"
    assert software_version({"METAQUORUM_VERSION_OVERRIDE": ""}) == metaquorum.__version__


def test_a_running_node_reports_its_version_on_status_and_metrics(tmp_path: Path) -> None:
    q = LocalQuorum(tmp_path, 2, extra=FAST)
    q.write_configs()
    q.format()
    q.start(1)
    q.start(2, extra_env={"METAQUORUM_VERSION_OVERRIDE": "9.8.7"})
    try:
        wait_for(lambda: all(s is not None for s in q.statuses().values()), 30, "/status")
        statuses = q.statuses()
        assert statuses[1] is not None and statuses[2] is not None
        assert statuses[1]["version"] == metaquorum.__version__
        assert statuses[1]["software_name"] == "metaquorum"
        assert statuses[2]["version"] == "9.8.7"
        # and its meta.properties directory id (the operator's migration reads it: a static
        # voter set has none in DescribeQuorum)
        for n in (1, 2):
            meta = read_meta_properties(q.nodes[n].directory)
            assert meta is not None and statuses[n]["directory_id"] == str(meta.directory_id)
        # a static voter set's voters have no directory id
        assert statuses[1]["voter_keys"] == [
            {"id": 1, "directory_id": None},
            {"id": 2, "directory_id": None},
        ]
        url = f"http://127.0.0.1:{q.nodes[2].http_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode()
        assert 'metaquorum_build_info{version="9.8.7"} 1.0' in text
    finally:
        q.stop_all()


def test_a_dynamic_voter_set_is_reported_with_each_voters_directory_id(tmp_path: Path) -> None:
    """/status's voter_keys: each voter's directory id as the node's log has it; the operator's
    lost-majority check (quorum_lost.py) tells a voter whose pod came back on a new volume by it,
    even after that pod copied the log as an observer."""
    q = LocalQuorum(tmp_path, 2, extra=FAST, dynamic=True)
    q.write_configs()
    q.format()
    q.start(1)
    q.start(2)
    try:
        wait_for(lambda: all(s is not None for s in q.statuses().values()), 30, "/status")
        for n, status in q.statuses().items():
            assert status is not None
            keys = {k["id"]: k["directory_id"] for k in status["voter_keys"]}
            assert sorted(keys) == status["voters"] == [1, 2], n
            for voter, d in keys.items():
                meta = read_meta_properties(q.nodes[voter].directory)
                assert meta is not None and d == str(meta.directory_id)
    finally:
        q.stop_all()

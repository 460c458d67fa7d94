"""The format init container's script, run with sh and the real `metaquorum storage format`.

The pod's paths are rewritten to a temporary directory (as the e2e stand-in does): an empty
volume formats --standalone on pod 0 of a new quorum and --no-initial-controllers otherwise; a
formatted volume of this cluster is left alone; another cluster's volume, another node's, or a
replaced directory is refused with exit 3 and one line, and never reformatted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from metaquorum_operator import builders
from metaquorum_operator.model import CONFIG_DIR, CONFIG_FILE, Names, Owner, QuorumSpec

NAMES = Names("q", "ns")
CID = "MkU3OEVBNTcwNTJENDM2Qk"

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh")


def run_format(
    tmp: Path,
    node: int,
    *,
    formed: bool,
    tombstones: frozenset[str] = frozenset(),
    cid: str = CID,
    recovery: str = "",
    spec: QuorumSpec | None = None,
) -> subprocess.CompletedProcess[str]:
    cfg = tmp / "etc"
    shutil.rmtree(cfg, ignore_errors=True)
    cfg.mkdir()
    cm = builders.configmap(
        spec or QuorumSpec(),
        NAMES,
        Owner("q", "u"),
        formed=formed,
        tombstones=tombstones,
        recovery=recovery,
    )
    for key, value in cm["data"].items():
        (cfg / key).write_text(value)
    data = tmp / f"data-{node}"
    script = builders.FORMAT_SCRIPT.replace(CONFIG_DIR, str(cfg))
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "CLUSTER_ID": cid,
        "METAQUORUM_NODE_ID": str(node),
        "METAQUORUM_METADATA_LOG_DIR": str(data),
        "METAQUORUM_LISTENERS": "CONTROLLER://127.0.0.1:9093",
        "METAQUORUM_ADVERTISED_LISTENERS": f"CONTROLLER://{NAMES.pod_fqdn(node)}:9093",
    }
    return subprocess.run(
        ["sh", "-c", script, "metaquorum-format", "--config", str(cfg / CONFIG_FILE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def meta(tmp: Path, node: int) -> dict[str, str]:
    text = (tmp / f"data-{node}" / "meta.properties").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_pod_0_of_a_new_quorum_formats_standalone_with_its_stable_name(tmp_path: Path) -> None:
    p = run_format(tmp_path, 0, formed=False)
    assert p.returncode == 0, p.stderr + p.stdout
    assert "Wrote the initial voters" in p.stdout  # the bootstrap checkpoint names it alone
    assert meta(tmp_path, 0)["cluster.id"] == CID
    checkpoint = next((tmp_path / "data-0").rglob("*.checkpoint"))
    assert NAMES.pod_fqdn(0).encode() in checkpoint.read_bytes()


def test_with_static_voters_pod_0_of_a_new_quorum_formats_as_a_static_voter(
    tmp_path: Path,
) -> None:
    voters = ",".join(f"{i}@{NAMES.pod_fqdn(i)}:9093" for i in range(3))
    p = run_format(tmp_path, 0, formed=False, spec=QuorumSpec(static_voters=voters))
    assert p.returncode == 0, p.stderr + p.stdout
    assert "Wrote the initial voters" not in p.stdout  # no bootstrap checkpoint: kraft.version 0
    assert not list((tmp_path / "data-0").rglob("*.checkpoint"))
    assert meta(tmp_path, 0)["directory.id"]  # what the migration to kraft.version 1 needs


@pytest.mark.parametrize(("node", "formed"), [(1, False), (2, True), (0, True)])
def test_other_members_and_a_formed_quorum_join_as_observers(
    tmp_path: Path, node: int, formed: bool
) -> None:
    p = run_format(tmp_path, node, formed=formed)
    assert p.returncode == 0, p.stderr + p.stdout
    assert "Wrote the initial voters" not in p.stdout
    assert meta(tmp_path, node)["node.id"] == str(node)


def test_a_formatted_volume_of_this_cluster_is_kept(tmp_path: Path) -> None:
    assert run_format(tmp_path, 1, formed=True).returncode == 0
    before = meta(tmp_path, 1)
    p = run_format(tmp_path, 1, formed=True)
    assert p.returncode == 0 and "volume formatted for cluster" in p.stdout
    assert meta(tmp_path, 1) == before


def test_another_clusters_volume_is_refused_not_reformatted(tmp_path: Path) -> None:
    assert run_format(tmp_path, 1, formed=True, cid="AAAAAAAAAAAAAAAAAAAAAQ").returncode == 0
    p = run_format(tmp_path, 1, formed=True)
    assert p.returncode == builders.REFUSED_EXIT
    assert p.stdout.startswith(builders.REFUSED_PREFIX + "the volume holds cluster AAAA")
    assert meta(tmp_path, 1)["cluster.id"] == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_a_replaced_directory_is_refused(tmp_path: Path) -> None:
    assert run_format(tmp_path, 2, formed=True).returncode == 0
    old = meta(tmp_path, 2)["directory.id"]
    p = run_format(tmp_path, 2, formed=True, tombstones=frozenset({"X", old}))
    assert p.returncode == builders.REFUSED_EXIT
    assert f"directory {old} was replaced" in p.stdout
    assert meta(tmp_path, 2)["directory.id"] == old


def test_a_recovery_request_for_this_node_runs_storage_recover_once(tmp_path: Path) -> None:
    """recovery.py: the survivor's formatted volume is recovered once per request (the marker
    holds the token); another node, or an empty volume, is never recovered."""
    assert run_format(tmp_path, 0, formed=False).returncode == 0  # a one-voter quorum's volume
    p = run_format(tmp_path, 0, formed=True, recovery="0 uid-a")
    assert p.returncode == 0, p.stderr + p.stdout
    assert "recovered " in p.stdout and "is the only voter" in p.stdout, p.stdout
    assert (tmp_path / "recovered-from").read_text() == "uid-a\n"
    again = run_format(tmp_path, 0, formed=True, recovery="0 uid-a")
    assert again.returncode == 0 and "recovered " not in again.stdout
    assert "recovered " in run_format(tmp_path, 0, formed=True, recovery="0 uid-b").stdout
    other = run_format(tmp_path, 1, formed=True, recovery="0 uid-c")  # empty volume, node 1
    assert other.returncode == 0 and "recovered " not in other.stdout
    assert (tmp_path / "recovered-from").read_text() == "uid-b\n"  # not node 1's request
    empty = run_format(tmp_path, 2, formed=True, recovery="2 uid-d")  # its own, on an empty volume
    assert empty.returncode == 0 and "recovered " not in empty.stdout
    assert meta(tmp_path, 2)["node.id"] == "2"  # formatted as an observer, not recovered

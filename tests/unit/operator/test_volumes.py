"""Volume growth (volumes.py): which PVCs grow, and the VolumesResized condition naming the fix
where a StorageClass cannot expand; the CRD's shrink rule."""

from __future__ import annotations

from pathlib import Path

import yaml
from metaquorum_operator.volumes import Claim, plan

ROOT = Path(__file__).resolve().parents[3]


def claim(i: int, req: str = "1Gi", cap: str | None = "1Gi", sc: str = "fast") -> Claim:
    return Claim(f"data-q-{i}", req, cap, sc)


def test_a_larger_size_grows_every_claim_of_an_expandable_class() -> None:
    p = plan("2Gi", [claim(1), claim(0)], {"fast": True})
    assert p.grow == ("data-q-0", "data-q-1")
    assert (p.status, p.reason) == ("False", "Resizing")
    assert "data-q-0: 1Gi -> 2Gi" in p.message


def test_a_patched_claim_waits_for_its_capacity_then_the_condition_holds() -> None:
    waiting = plan("2Gi", [claim(0, "2Gi", "1Gi")], {"fast": True})
    assert waiting.grow == () and waiting.reason == "Resizing"
    pending = Claim("data-q-0", "2Gi", "1Gi", "fast", fs_resize_pending=True)
    assert "the operator restarts each such pod" in plan("2Gi", [pending], {"fast": True}).message
    done = plan("2048Mi", [claim(0, "2Gi", "2Gi"), claim(1, "2Gi", "3Gi")], {"fast": True})
    assert (done.grow, done.status, done.reason) == ((), "True", "AsRequested")


def test_a_class_without_expansion_is_named_with_the_fix_and_nothing_is_patched() -> None:
    p = plan("2Gi", [claim(0, sc="slow"), claim(1, sc="slow")], {"slow": False})
    assert p.grow == ()
    assert (p.status, p.reason) == ("False", "ExpansionNotAllowed")
    assert "StorageClass slow does not allow volume expansion" in p.message
    assert "data-q-0, data-q-1 stay at 1Gi" in p.message
    assert "allowVolumeExpansion: true" in p.message
    assert plan("2Gi", [claim(0, sc="gone")], {}).reason == "ExpansionNotAllowed"


def test_the_same_or_a_smaller_size_grows_nothing() -> None:
    assert plan("1Gi", [claim(0, "1Gi")], {"fast": True}).grow == ()
    assert plan("1G", [claim(0, "1Gi")], {"fast": True}).grow == ()  # 1G < 1Gi


def test_the_crd_refuses_a_shrink_with_a_transition_rule_and_lets_the_size_grow() -> None:
    crd = yaml.safe_load((ROOT / "crds" / "metadataquorums.metaquorum.dev.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    storage = spec["properties"]["storage"]
    rules = storage["properties"]["size"]["x-kubernetes-validations"]
    shrink = [r for r in rules if "oldSelf" in r["rule"]]
    assert len(shrink) == 1 and "isLessThan(quantity(oldSelf))" in shrink[0]["rule"]
    assert "not shrink" in shrink[0]["message"]
    assert all("self.size" not in r["rule"] for r in storage["x-kubernetes-validations"])

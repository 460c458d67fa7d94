"""The chart as a package (issue 32): `helm package` into a directory as `make chart` does, then
`helm lint --strict` and `helm template` of the package (not the source folder) against
values.schema.json, with image defaults that are what `make images` builds. No cluster; helm
from e2e/tools/install-clients.sh (cached). About 3 s."""

from __future__ import annotations

import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "metaquorum"


def project_version() -> str:
    m = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert m
    return m.group(1)


@pytest.fixture(scope="module")
def helm() -> Path:
    out = subprocess.run(
        [str(ROOT / "e2e" / "tools" / "install-clients.sh")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return Path(out.stdout.strip().splitlines()[-1]) / "helm"


@pytest.fixture(scope="module")
def package(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("dist")
    subprocess.run([helm, "package", CHART, "-d", dest], check=True, capture_output=True)
    (tgz,) = dest.glob("*.tgz")
    return tgz


def helm_run(helm: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm, *args], capture_output=True, text=True, check=False)


def test_package_is_named_by_the_chart_version_and_carries_schema_and_crds(package: Path) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert package.name == f"metaquorum-{chart['version']}.tgz"
    assert chart["appVersion"] == project_version()
    with tarfile.open(package) as tar:
        names = set(tar.getnames())
    assert "metaquorum/values.schema.json" in names
    assert "metaquorum/crds/metadataquorums.metaquorum.dev.yaml" in names


def test_package_lints_strict(helm: Path, package: Path) -> None:
    proc = helm_run(helm, "lint", "--strict", package)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in proc.stdout


def test_image_defaults_are_what_make_images_builds(helm: Path, package: Path) -> None:
    out = helm_run(helm, "template", "mq", package, "--namespace", "ops")
    assert out.returncode == 0, out.stderr
    (deploy,) = [d for d in yaml.safe_load_all(out.stdout) if d and d["kind"] == "Deployment"]
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    # build_images.py names them docker.io/metaquorum/<name>:<pyproject version>
    assert container["image"] == f"metaquorum/operator:{project_version()}"
    sample = yaml.safe_load((ROOT / "e2e" / "samples" / "metadataquorum.yaml").read_text())
    assert sample["spec"]["image"] == f"metaquorum/node:{project_version()}"


def test_schema_refuses_typos_and_bad_values_in_the_package(helm: Path, package: Path) -> None:
    typo = helm_run(helm, "template", "mq", package, "--set", "operater.logLevel=debug")
    assert typo.returncode != 0 and "operater" in typo.stderr
    bad = helm_run(helm, "template", "mq", package, "--set", "operator.logLevel=loud")
    assert bad.returncode != 0 and "logLevel" in bad.stderr

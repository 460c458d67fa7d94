"""The scripted image build (e2e/tools/build_images.py) against what the Dockerfiles describe.

The Dockerfiles are the source of truth for users with Docker; the scripted build is what the
real-kubelet e2e target runs. This compares, for each image: the OCI config (user, workdir, env,
exposed ports, entrypoint, cmd) with the Dockerfile's final stage; the files COPY puts there
(byte for byte); the USER's passwd entry and its ownership of the workdir; the entrypoint
resolving on the image's PATH to a script whose interpreter exists; the apt packages installed;
every locked dependency (uv export of the extra the build stage names) installed at its locked
version, and the project at its own; the node image's compiled build (issue 28); no apt/pip
caches left in the image.
"""

from __future__ import annotations

import re
from email.parser import Parser
from pathlib import Path

import pytest
from build_images import IMAGES, apt_packages, version
from dockerfile import copy_args, image_config, parse_file

from tests.containers.images import ROOT, Image, compiled_modules

pytestmark = pytest.mark.containers


def final_stage(name: str):  # type: ignore[no-untyped-def]
    return parse_file(ROOT / IMAGES[name])[-1]


def locked_requirements(name: str) -> dict[str, str]:
    import subprocess

    build = parse_file(ROOT / IMAGES[name])[0]
    (extra,) = re.findall(r"--extra (\S+)", " ".join(i.value for i in build.ops("RUN")))
    text = subprocess.run(
        [str(ROOT / ".tools/bin/uv"), "export", "--project", str(ROOT), "--frozen", "--no-dev",
         "--no-emit-project", "--extra", extra, "--format", "requirements-txt"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==([^ ;\\]+)", text, re.M)
    return {canon(n): v for n, v in pins}


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(rootfs: Path) -> dict[str, str]:
    site = next((rootfs / "opt/metaquorum/venv/lib").glob("python3*/site-packages"))
    out = {}
    for meta in site.glob("*.dist-info/METADATA"):
        msg = Parser().parsestr(meta.read_text(errors="replace"), headersonly=True)
        out[canon(msg["Name"])] = msg["Version"]
    return out


@pytest.mark.parametrize("name", list(IMAGES))
def test_oci_config_is_the_dockerfiles(name: str, images: dict[str, Image]) -> None:
    want = image_config(final_stage(name))
    got = images[name].oci_config()["config"]
    assert got.get("User") == want.user
    assert got.get("WorkingDir") == want.workdir
    assert dict(e.split("=", 1) for e in got.get("Env", [])) == want.env
    assert sorted(got.get("ExposedPorts", {})) == sorted(want.exposed)
    assert (got.get("Cmd") or []) == want.cmd
    assert (got.get("Entrypoint") or []) == want.entrypoint
    assert images[name].oci_config()["architecture"] == "amd64"


@pytest.mark.parametrize("name", list(IMAGES))
def test_files_user_and_entrypoint(name: str, rootfs: dict[str, Path]) -> None:
    root = rootfs[name]
    stage = final_stage(name)
    cfg = image_config(stage)
    for ins in stage.ops("COPY"):
        src_stage, srcs, dest = copy_args(ins)
        if src_stage is None:  # from the build context: byte for byte
            (src,) = srcs
            assert (root / dest.lstrip("/")).read_bytes() == (ROOT / src).read_bytes()
    passwd = {
        line.split(":")[2]: line.split(":")
        for line in (root / "etc/passwd").read_text().splitlines()
    }
    user = passwd[cfg.user]
    assert user[0] == "metaquorum"
    home_created = "--create-home" in " ".join(i.value for i in stage.ops("RUN"))
    assert (root / user[5].lstrip("/")).is_dir() == home_created
    workdir = root / cfg.workdir.lstrip("/")
    assert workdir.is_dir()
    if cfg.workdir != "/":
        assert str(workdir.stat().st_uid) == cfg.user, "the workdir must be the user's"
    argv0 = (cfg.entrypoint or cfg.cmd)[0]
    exe = next(
        root / d.lstrip("/") / argv0
        for d in cfg.env["PATH"].split(":")
        if (root / d.lstrip("/") / argv0).exists()
    )
    assert exe.stat().st_mode & 0o111
    shebang = exe.read_text().splitlines()[0]
    interp = root / shebang.removeprefix("#!").split()[0].lstrip("/")
    assert interp.exists() or interp.is_symlink(), shebang


@pytest.mark.parametrize("name", list(IMAGES))
def test_locked_dependencies_and_packages(name: str, rootfs: dict[str, Path]) -> None:
    root = rootfs[name]
    have = installed(root)
    want = locked_requirements(name)
    assert want, "uv export named no dependency"
    assert {n: have.get(n) for n in want} == want
    assert have["metaquorum"] == version()
    status = (root / "var/lib/dpkg/status").read_text()
    for pkg in apt_packages(final_stage(name)):
        block = re.search(rf"^Package: {re.escape(pkg)}\n(?:.+\n)*?Status: (.+)", status, re.M)
        assert block and block.group(1) == "install ok installed", pkg
    assert not list((root / "var/cache/apt").glob("*.bin"))
    assert not [p for p in (root / "var/lib/apt/lists").iterdir() if p.name != "partial"]
    assert not (root / "wheels").exists()
    assert not (root / "root/.cache/pip").exists()


@pytest.mark.parametrize("name", list(IMAGES))
def test_the_node_image_carries_the_compiled_build(name: str, rootfs: dict[str, Path]) -> None:
    """Issue 28: node/Dockerfile lays mypyc's extension modules over the installed package, one
    beside each module scripts/build_compiled.py compiles (the operator image stays pure)."""
    site = next((rootfs[name] / "opt/metaquorum/venv/lib").glob("python3*/site-packages"))
    have = {
        p.relative_to(site / "metaquorum").as_posix().split(".", 1)[0] + ".py"
        for p in (site / "metaquorum").rglob("*.cpython-311-x86_64-linux-gnu.so")
    }
    shared = list(site.glob("*__mypyc.cpython-311-x86_64-linux-gnu.so"))
    if name == "node":
        assert have == set(compiled_modules())
        assert len(shared) == 1, shared
    else:
        assert not have and not shared

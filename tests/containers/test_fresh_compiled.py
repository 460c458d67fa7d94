"""The compiled build on a fresh Debian (issue 28: `make test` on a fresh machine builds what it
needs by itself, a C compiler from Debian's packages if missing), two ways, each ~5.5 min (apt,
PyPI, mypyc; root and the network):

- `make compiled` as a user types it in a clean clone of this repository's committed HEAD, on
  a fresh root (tests/containers/fresh_root.py: bookworm minbase + python3/python3-venv, no gcc,
  no python3-dev) with `make` from apt (a fresh machine has it): scripts/fast-python.sh picks
  Debian's python3.11, `make setup` builds the venv, and scripts/build_compiled.py must install
  gcc and python3.11-dev itself;
- node/Dockerfile's build stage executed as written (its RUNs in the chroot, its COPYs from
  this working tree), which the scripted image build does on the host instead: what a user with
  Docker runs must compile too, and leave an extension module for every compiled module.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from build_images import copy_into
from dockerfile import DockerfileError, copy_args, parse_file

from tests.containers.fresh_root import chroot_run, fresh_root
from tests.containers.images import ROOT, compiled_modules

pytestmark = pytest.mark.containers
SO = ".cpython-311-x86_64-linux-gnu.so"


@pytest.fixture
def root(tmp_path: Path):  # type: ignore[no-untyped-def]
    if os.geteuid() != 0:
        pytest.fail("the containers tier needs root (chroot)")
    with fresh_root(tmp_path) as r:
        yield r


@pytest.mark.timeout(1800)
def test_make_compiled_on_a_fresh_debian_gets_its_toolchain_from_apt(root: Path) -> None:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(root / "src")], check=True)
    fresh = chroot_run(
        root,
        "command -v gcc || echo no-gcc; ls /usr/include/python3.11/Python.h 2>/dev/null"
        " || echo no-headers; apt-get update -q >/dev/null"
        " && apt-get install -y -q make >/dev/null",
        600,
    )
    assert "no-gcc" in fresh and "no-headers" in fresh, "the root is not fresh"
    chroot_run(root, "cd /src && make compiled", 1500)
    where = chroot_run(
        root,
        "command -v gcc && cd /src && PYTHONPATH=build/compiled .venv/bin/python -c"
        " 'import metaquorum.core.node as m; print(m.__file__)'",
        120,
    )
    assert where.split()[0] == "/usr/bin/gcc", "gcc came from Debian's packages"
    assert where.split()[-1] == f"/src/build/compiled/metaquorum/core/node{SO}"


@pytest.mark.timeout(1800)
def test_the_node_dockerfiles_build_stage_as_written_compiles_the_tree(root: Path) -> None:
    build = parse_file(ROOT / "node" / "Dockerfile")[0]
    workdir = "/"
    for ins in build.instructions:
        if ins.op == "RUN":
            chroot_run(root, f"cd {workdir} && {ins.value}", 1500)
        elif ins.op == "WORKDIR":
            workdir = str(Path(workdir) / ins.value)
            (root / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
        elif ins.op == "COPY":
            src_stage, srcs, dest = copy_args(ins)
            assert src_stage is None
            copy_into([ROOT / s for s in srcs], root, dest, workdir)
        else:
            raise DockerfileError(f"line {ins.line}: {ins.op} in the build stage")
    tree = root / "wheels" / "compiled" / "metaquorum"
    have = {p.relative_to(tree).as_posix().split(".", 1)[0] + ".py" for p in tree.rglob(f"*{SO}")}
    assert have == set(compiled_modules())
    assert list((root / "wheels" / "compiled").glob(f"*__mypyc{SO}"))

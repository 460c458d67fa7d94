"""The node image's compiled hot path in the scripted image build (issue 28, build_images.py).

Role: node/Dockerfile's build stage runs `scripts/build_compiled.py --out /wheels/compiled`
(mypyc over a copy of the package, on bookworm's python3) and its final stage lays the C extension
modules over the installed package. build_images.py does the build stage on the host: this module
finds that step in the stage and does it with the host's venv, which must be the image's CPython
minor version (the extension modules' ABI tag), reusing the repository's build/compiled (rebuilt
only when a source changed; `make compiled` shares it through build_compiled.py's lock).

Invariant: a venv of another CPython is refused with the fix, never a silently pure image (the
Dockerfile's final stage also fails the build if the compiled core does not load).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from dockerfile import DockerfileError, Stage

ROOT = Path(__file__).resolve().parents[2]
# bookworm's python3 (3.11): the ABI of the compiled build's extension modules in the node image
IMAGE_EXT_SUFFIX = ".cpython-311-x86_64-linux-gnu.so"


def _run(*argv: str | Path) -> str:
    """The command's stdout (its stderr, progress lines, goes to ours)."""
    done = subprocess.run(
        [str(a) for a in argv], check=True, text=True, stdout=subprocess.PIPE, stderr=sys.stderr
    )
    return done.stdout.strip()


def compiled_out(stage: Stage) -> str | None:
    """Where under /wheels the build stage puts the compiled tree (`scripts/build_compiled.py
    --out /wheels/<dir>`), or None when it builds none."""
    runs = " ".join(i.value for i in stage.ops("RUN"))
    m = re.search(r"build_compiled\.py --out /wheels/(\S+)", runs)
    return m.group(1) if m else None


def build_python() -> Path:
    """The interpreter the build stage's mypyc runs on here: the venv's, which must be the
    image's CPython minor version (the extension modules' ABI, `.cpython-311-...so`)."""
    py = ROOT / ".venv" / "bin" / "python"
    suffix = _run(py, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
    if suffix != IMAGE_EXT_SUFFIX:
        raise DockerfileError(
            f"the compiled build needs a CPython 3.11 venv here (the image's); .venv's builds "
            f"{suffix}: make setup PYTHON=/usr/bin/python3.11"
        )
    return py


def build_compiled(dest: Path) -> None:
    """The build stage's `scripts/build_compiled.py` on the host: the repository's own compiled
    tree (build/compiled, rebuilt only when a source changed; `make compiled` shares it through
    its lock), copied to `dest`."""
    out = _run(build_python(), ROOT / "scripts" / "build_compiled.py")
    shutil.copytree(out, dest, symlinks=True)

"""The containers tier's view of a built image: its OCI config and its unpacked root filesystem.

Images come from e2e/tools/build-images.sh (cached by content); `build()` runs it. This module
also puts e2e/tools on sys.path for the builder's own parser and constants."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "e2e" / "tools"))


@dataclass
class Image:
    name: str
    ref: str
    archive: Path

    def oci_config(self) -> dict[str, Any]:
        """The image config blob (index.json -> manifest -> config), read from the archive."""
        with tarfile.open(self.archive) as tar:

            def blob(digest: str) -> Any:
                f = tar.extractfile("./blobs/sha256/" + digest.split(":", 1)[1])
                assert f is not None
                return json.load(f)

            index_f = tar.extractfile("./index.json")
            assert index_f is not None
            index = json.load(index_f)
            assert [m["annotations"]["io.containerd.image.name"] for m in index["manifests"]] == [
                self.ref
            ]
            manifest = blob(index["manifests"][0]["digest"])
            return dict(blob(manifest["config"]["digest"]))

    def unpack(self, dest: Path) -> Path:
        """The image's root filesystem under dest (umoci unpack of the archive's layout)."""
        layout = dest / "layout"
        layout.mkdir(parents=True)
        # tar(1): bookworm's Python 3.11.2 (the venv's) has no extractall(filter=...)
        subprocess.run(["tar", "-C", str(layout), "-xf", str(self.archive)], check=True)
        tag = self.ref.rsplit(":", 1)[1]
        subprocess.run(
            ["umoci", "unpack", "--image", f"{layout}:{tag}", str(dest / "bundle")],
            check=True,
            capture_output=True,
        )
        return dest / "bundle" / "rootfs"


def build() -> dict[str, Image]:
    """Build (or find cached) both images: {name: Image}."""
    out = subprocess.run(
        [str(ROOT / "e2e" / "tools" / "build-images.sh")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    found = {}
    for line in out.stdout.splitlines():
        name, ref, archive = line.split("\t")
        found[name] = Image(name, ref, Path(archive))
    assert set(found) == {"node", "operator"}, out.stdout
    return found


def compiled_modules() -> list[str]:
    """The package-relative modules scripts/build_compiled.py compiles (its own list)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "build_compiled_for_images", ROOT / "scripts" / "build_compiled.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    found: list[str] = mod.compiled_modules()
    return found

"""Images made from other images with umoci, no rebuild: the e2e tier's variants of a built image
(build_images.VARIANTS: the same layers and one more ENV, e.g. node-next reporting the next minor
version for the upgrade e2e) and one-binary images (the sandbox's pause program).

Role: split from build_images.py (which builds the Dockerfiles' images) to keep both short.
Invariants: a variant or a one-binary image is cached by everything that goes into it (the base
archive, the ENV, the reference; the binary and this file) and written under a temporary name,
renamed into place whole, so a crash never leaves a half archive that a later call would use.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path


def run(*argv: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], check=True, text=True, **kw)  # type: ignore[call-overload]


def pack_layout(layout: Path, ref: str, tar: Path) -> None:
    """Garbage-collect an OCI layout, name its manifests `ref` (the annotation `ctr images
    import` reads) and write it as one tar: the last step of every image built here."""
    run("umoci", "gc", "--layout", layout)
    index = json.loads((layout / "index.json").read_text())
    for m in index["manifests"]:
        m.setdefault("annotations", {})["io.containerd.image.name"] = ref
    (layout / "index.json").write_text(json.dumps(index))
    run("tar", "-C", layout, "-cf", tar, ".")


def next_minor(v: str) -> str:
    """0.1.0 -> 0.2.0: the version node-next reports."""
    major, minor, *_ = (v.split("+", maxsplit=1)[0].split("-", maxsplit=1)[0] + ".0.0").split(".")
    return f"{major}.{int(minor) + 1}.0"


def variant_image(
    name: str,
    base_archive: Path,
    cache: Path,
    variants: dict[str, tuple[str, dict[str, str]]],
    version: str,
) -> tuple[str, Path]:
    """VARIANTS[name] of a built image: its layout with ENV added (umoci config) and named
    docker.io/metaquorum/<base>:<the variant's tag>; cached by the base archive and the ENV."""
    base, env = variants[name]
    nxt = next_minor(version)
    env = {k: v.replace("{next}", nxt) for k, v in env.items()}
    tag = nxt if name == "node-next" else f"{version}-{name.removeprefix(base + '-')}"
    ref = f"docker.io/metaquorum/{base}:{tag}"
    h = hashlib.sha256(
        str(base_archive).encode() + json.dumps(env, sort_keys=True).encode() + ref.encode()
    )
    out = cache / f"{name}-{h.hexdigest()[:16]}"
    archive = out / "image.tar"
    if archive.exists():
        return ref, archive
    shutil.rmtree(out, ignore_errors=True)
    layout = out / "oci"
    layout.mkdir(parents=True)
    run("tar", "-C", layout, "-xf", base_archive)
    run(
        "umoci", "config", "--image", f"{layout}:{version}",
        *[f"--config.env={k}={v}" for k, v in env.items()],
        f"--history.created_by=build_images.py: variant {name} ({' '.join(env)})",
    )  # fmt: skip
    pack_layout(layout, ref, out / "image.tmp")
    shutil.rmtree(layout)
    (out / "image.tmp").rename(archive)
    return ref, archive


def static_image(binary: Path, ref: str, cache: Path) -> Path:
    """A one-file image: a static binary as /<name> and its entrypoint (the sandbox's pause)."""
    h = hashlib.sha256(binary.read_bytes() + ref.encode() + Path(__file__).read_bytes())
    name = ref.rsplit("/", 1)[-1].split(":", maxsplit=1)[0]
    out = cache / f"{name}-{h.hexdigest()[:16]}"
    archive = out / "image.tar"
    if archive.exists():
        return archive
    shutil.rmtree(out, ignore_errors=True)
    layout, bundle, tag = out / "oci", out / "bundle", ref.rsplit(":", 1)[1]
    out.mkdir(parents=True)
    run("umoci", "init", "--layout", layout)
    run("umoci", "new", "--image", f"{layout}:{tag}")
    run("umoci", "unpack", "--image", f"{layout}:{tag}", bundle, stdout=subprocess.DEVNULL)
    shutil.copy2(binary, bundle / "rootfs" / name)
    run("umoci", "repack", "--image", f"{layout}:{tag}", bundle)
    run("umoci", "config", "--image", f"{layout}:{tag}", f"--config.entrypoint=/{name}",
        "--config.user=65535:65535")  # fmt: skip
    pack_layout(layout, ref, out / "image.tmp")
    shutil.rmtree(layout)
    shutil.rmtree(bundle)
    (out / "image.tmp").rename(archive)
    return archive

"""`make images`: the node and operator images as files a user loads anywhere, in dist/.

Role: takes the images e2e/tools/build-images.sh builds (OCI layouts from Debian's packages,
PyPI's locked wheels and the Dockerfiles; cached by content) and writes, per image,
`dist/metaquorum-<name>-<version>.oci.tar` (an OCI image layout archive: `podman load`,
`ctr images import`, `kind load image-archive`, `skopeo copy oci-archive:`), its software bill
of materials `dist/metaquorum-<name>-<version>.cdx.json` (CycloneDX 1.5), and for both
`dist/images.json` (reference, manifest digest, sizes) and `dist/SHA256SUMS`.

The SBOM is derived from the image itself, not from a scanner: the Debian packages are dpkg's
status file in the image's layers (`pkg:deb/debian/<name>@<version>?arch=<arch>`), the Python
distributions the `*.dist-info/METADATA` files of its venv (`pkg:pypi/<name>@<version>`); the
latter are exactly uv.lock's versions (the image installs the locked requirements with hashes;
tests/containers/test_dist_images.py checks it). Why not syft: building it from the Go module
proxy is a large module graph on a 2-core machine, and its Debian and Python catalogers read
these same two sources.

Invariants: the archives are byte-for-byte the cached build (the digest in images.json is the
one `ctr`/`podman` show); the image name inside is docker.io/metaquorum/<name>:<version>.
"""

from __future__ import annotations

import email.parser
import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DIST = ROOT / "dist"


def read_oci(archive: Path) -> tuple[dict[str, Any], dict[str, Any], list[bytes]]:
    """(index entry of the manifest, image config, layer blobs gunzipped) of an OCI archive."""
    with tarfile.open(archive) as tar:

        def blob(digest: str) -> bytes:
            f = tar.extractfile("./blobs/sha256/" + digest.split(":", 1)[1])
            assert f is not None
            return f.read()

        f = tar.extractfile("./index.json")
        assert f is not None
        (entry,) = json.load(f)["manifests"]
        manifest = json.loads(blob(entry["digest"]))
        config = json.loads(blob(manifest["config"]["digest"]))
        layers = [gzip.decompress(blob(layer["digest"])) for layer in manifest["layers"]]
    return entry, config, layers


def packages(layers: list[bytes]) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """Debian packages (name -> (version, arch)) and Python distributions (name -> version),
    the later layer's files winning."""
    import io

    debs: dict[str, tuple[str, str]] = {}
    dists: dict[str, str] = {}
    meta = re.compile(
        r"opt/metaquorum/venv/lib/python3[.0-9]*/site-packages/[^/]+\.dist-info/METADATA"
    )
    for layer in layers:
        with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
            for m in tar.getmembers():
                name = m.name.removeprefix("./")
                if name == "var/lib/dpkg/status":
                    f = tar.extractfile(m)
                    assert f is not None
                    debs = {}
                    for para in f.read().decode().split("\n\n"):
                        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", para, re.M))
                        if "installed" in fields.get("Status", "") and "Package" in fields:
                            debs[fields["Package"]] = (fields["Version"], fields["Architecture"])
                elif meta.fullmatch(name):
                    f = tar.extractfile(m)
                    assert f is not None
                    msg = email.parser.Parser().parsestr(f.read().decode(errors="replace"))
                    dists[msg["Name"]] = msg["Version"]
    return debs, dists


def sbom(ref: str, version: str, digest: str, config: dict[str, Any], layers: list[bytes]) -> Any:
    debs, dists = packages(layers)
    comps = [
        {"type": "library", "name": n, "version": v,
         "purl": f"pkg:deb/debian/{n}@{v}?arch={a}&distro=debian-12"}
        for n, (v, a) in sorted(debs.items())
    ] + [
        {"type": "library", "name": n, "version": v,
         "purl": f"pkg:pypi/{n.lower().replace('_', '-')}@{v}"}
        for n, v in sorted(dists.items(), key=lambda kv: kv[0].lower())
    ]  # fmt: skip
    for c in comps:
        c["bom-ref"] = c["purl"]
    short = ref.rsplit("/", 1)[-1].split(":", maxsplit=1)[0]
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, ref + '@' + digest)}",
        "version": 1,
        "metadata": {
            "timestamp": config.get("created", ""),
            "tools": {"components": [{"type": "application", "name": "e2e/tools/dist_images.py"}]},
            "component": {
                "type": "container",
                "name": ref.rsplit(":", 1)[0],
                "version": version,
                "purl": f"pkg:oci/{short}@{digest.replace(':', '%3A')}",
                "hashes": [{"alg": "SHA-256", "content": digest.split(":", 1)[1]}],
            },
        },
        "components": comps,
    }


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main() -> int:
    built = subprocess.run(
        [str(HERE / "build-images.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    if built.returncode != 0:
        print("make images: build-images.sh failed (see above)", file=sys.stderr)
        return 1
    DIST.mkdir(exist_ok=True)
    summary, sums = [], []
    for line in built.stdout.strip().splitlines():
        name, ref, archive = line.split("\t")
        version = ref.rsplit(":", 1)[1]
        out = DIST / f"metaquorum-{name}-{version}.oci.tar"
        shutil.copyfile(archive, out)
        entry, config, layers = read_oci(out)
        digest = entry["digest"]
        bom = DIST / f"metaquorum-{name}-{version}.cdx.json"
        bom.write_text(json.dumps(sbom(ref, version, digest, config, layers), indent=1) + "\n")
        stats = json.loads((Path(archive).parent / "build.json").read_text())
        summary.append({
            "name": name, "ref": ref, "digest": digest, "archive": out.name, "sbom": bom.name,
            "archive_bytes": out.stat().st_size, "rootfs_bytes": stats.get("rootfs_bytes"),
            "user": config["config"].get("User"),
            "labels": config["config"].get("Labels", {}),
        })  # fmt: skip
        sums += [f"{sha256(p)}  {p.name}" for p in (out, bom)]
        print(f"{out.relative_to(ROOT)}  {ref}@{digest}  {out.stat().st_size / 1e6:.0f} MB")
    (DIST / "images.json").write_text(json.dumps(summary, indent=1) + "\n")
    (DIST / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

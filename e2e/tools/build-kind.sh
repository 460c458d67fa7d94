#!/usr/bin/env bash
# Build kind (sigs.k8s.io/kind) from the Go module proxy, cached by version, for `make cluster
# KIND=1` (e2e/userkind.py, docs/cluster.md).
#
# Role: kind is a single Go module with a small dependency set; `go install module@version`
# builds it from the proxy (no git, no registry). Idempotent; concurrent callers serialise on a
# lock file (scripts/go-build-cached.sh). kind itself still needs Docker or Podman and its node
# image (kindest/node) at run time: this script only provides the binary.
# Output (stdout, last line): the directory holding `kind`.
# Env: KIND_VERSION (default v0.30.0), METAQUORUM_CACHE, GO_BUILD_P (go build -p, default 1).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/go-build-cached.sh"

go_cached_begin kind "${KIND_VERSION:-v0.30.0}" kind
go_cached_install sigs.k8s.io/kind

#!/usr/bin/env bash
# Build promtool (Prometheus's rule checker) from the Go module proxy, cached by version.
#
# Role: `promtool check rules` / `promtool test rules` on the chart's PrometheusRule in the unit
# tier (tests/unit/operator/test_alerts.py). `go install <module>/cmd/promtool@<version>` of
# github.com/prometheus/prometheus (its Go module versions are v0.<major><minor>.<patch>:
# v0.316.0 is Prometheus 3.16.0).
# Output (stdout, last line): the directory holding `promtool`.
# Env: PROMTOOL_VERSION (default v0.316.0), METAQUORUM_CACHE, GO_BUILD_P (default 1).
set -euo pipefail

VERSION="${PROMTOOL_VERSION:-v0.316.0}"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
OUT="$CACHE/promtool-$VERSION"
BIN="$OUT/bin"
log() { echo "[build-promtool] $*" >&2; }
die() { echo "[build-promtool] ERROR: $*" >&2; exit 1; }

if [[ -x "$BIN/promtool" ]]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || die "go not found"
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if [[ -x "$BIN/promtool" ]]; then echo "$BIN"; exit 0; fi
export GOFLAGS="-p=${GO_BUILD_P:-1}" GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$OUT/tmp"
t0=$SECONDS
go install -trimpath -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/promtool@$VERSION" >&2 \
    || die "go install github.com/prometheus/prometheus/cmd/promtool@$VERSION failed"
mkdir -p "$BIN"
mv "$OUT/tmp/promtool" "$BIN/promtool"
log "promtool $VERSION built in $((SECONDS - t0)) s"
echo "$BIN"

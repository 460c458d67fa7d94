#!/usr/bin/env bash
# Install Grafana's dashboard schema and the TypeScript compiler from the npm registry, cached by
# the lock file's content.
#
# Role: tests/unit/operator/test_dashboard_schema.py type-checks the chart's Grafana dashboard
# against the `Dashboard` type of @grafana/schema (the types Grafana generates from its own CUE
# dashboard kind, Apache-2.0) with `tsc --strict`. Versions are pinned in
# e2e/tools/grafana-schema/package.json and package-lock.json (`npm ci`: exactly the lock).
# Output (stdout, last line): the directory holding node_modules/.
# Env: METAQUORUM_CACHE.
set -euo pipefail
cd "$(dirname "$0")/grafana-schema"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
OUT="$CACHE/grafana-schema-$(sha256sum package-lock.json | cut -c1-16)"
log() { echo "[install-grafana-schema] $*" >&2; }
die() { echo "[install-grafana-schema] ERROR: $*" >&2; exit 1; }

ready() { [[ -x "$OUT/node_modules/.bin/tsc" && -f "$OUT/node_modules/@grafana/schema/package.json" ]]; }
if ready; then echo "$OUT"; exit 0; fi
if ! command -v npm >/dev/null; then  # the machine's Node.js has it; else Debian's
    log "installing npm (apt-get)"
    ../../../scripts/apt-install.sh npm || die "npm not found and apt-get install npm failed"
fi
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
if ready; then echo "$OUT"; exit 0; fi
cp package.json package-lock.json "$OUT/"
t0=$SECONDS
(cd "$OUT" && npm ci --ignore-scripts --no-audit --no-fund >&2) || die "npm ci in $OUT failed"
log "installed in $((SECONDS - t0)) s"
echo "$OUT"

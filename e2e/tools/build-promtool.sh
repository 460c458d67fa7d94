#!/usr/bin/env bash
# Build promtool (Prometheus's rule checker) from the Go module proxy, cached by version.
#
# Role: `promtool check rules` / `promtool test rules` on the chart's PrometheusRule in the unit
# tier (tests/unit/operator/test_alerts.py). `go install <module>/cmd/promtool@<version>` of
# github.com/prometheus/prometheus (its Go module versions are v0.<major><minor>.<patch>:
# v0.316.0 is Prometheus 3.16.0); cache and lock: scripts/go-build-cached.sh.
# Output (stdout, last line): the directory holding `promtool`.
# Env: PROMTOOL_VERSION (default v0.316.0), METAQUORUM_CACHE, GO_BUILD_P (default 1).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/go-build-cached.sh"

go_cached_begin promtool "${PROMTOOL_VERSION:-v0.316.0}" promtool
go_cached_install github.com/prometheus/prometheus/cmd/promtool

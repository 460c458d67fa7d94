#!/usr/bin/env bash
# `make test` starts this before its first tier: the e2e tier's cached builds, in the background
# at the lowest CPU priority, so that on a fresh machine their ~15 minutes of Go and image builds
# (kube-apiserver + controller-manager + etcd; on the real-kubelet target also kubelet,
# kube-proxy, kube-scheduler, CoreDNS and the node/operator images) overlap the tiers before e2e
# rather than add to them. With warm caches every step is a no-op within a second.
#
# Invariants: e2e/run.sh calls the same build scripts, which serialise on their lock files, so it
# waits for a build in progress and never starts a second one; a failed step here is only logged
# (run.sh builds again and reports the failure). Everything this starts is one process group,
# killed when the process named by $1 (the make running the tiers) exits. Log:
# $METAQUORUM_CACHE/prebuild.log.
# Usage: e2e/tools/prebuild.sh PARENT_PID
set -uo pipefail
cd "$(dirname "$0")/../.."
parent="${1:?usage: prebuild.sh PARENT_PID}"
CACHE="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}"
mkdir -p "$CACHE"
log="$CACHE/prebuild.log"

steps() {
    local t0=$SECONDS
    step() {
        local s=$SECONDS
        if nice -n 19 "$@" >/dev/null; then
            echo "[prebuild] $* done in $((SECONDS - s)) s"
        else
            echo "[prebuild] $* FAILED after $((SECONDS - s)) s (e2e/run.sh will try again)"
        fi
    }
    step scripts/build-seaweedfs.sh  # the integration tier's S3 server (docs/backup.md)
    step e2e/tools/build-k8s.sh
    step e2e/tools/build-promtool.sh  # the slow tier's PrometheusRule checks (test_alerts.py)
    step e2e/tools/install-grafana-schema.sh  # the dashboard's schema check (npm)
    if e2e/tools/container-host.sh check >/dev/null; then
        step e2e/tools/container-host.sh install
        step e2e/tools/build-images.sh
        step e2e/tools/build-k8s-node.sh
        step e2e/tools/build-coredns.sh
    fi
    echo "[prebuild] all done in $((SECONDS - t0)) s"
}

# A session of its own: `kill -- -PGID` below stops every build it started, and nothing else.
export -f steps
# setsid also makes a new scheduler autogroup, and with autogroups (Linux's default) a nice value
# only ranks processes within their group: the group's own nice is set to 19 as well, or the
# builds would take half the CPU from the tiers (seen: simulation 531 s instead of 329 s).
setsid bash -c '
    parent=$1
    echo 19 2>/dev/null >/proc/self/autogroup
    echo "[prebuild] scheduler $(cat /proc/self/autogroup 2>/dev/null || echo "autogroup: none")"
    steps &
    builds=$!
    while kill -0 "$builds" 2>/dev/null; do
        if ! kill -0 "$parent" 2>/dev/null; then
            echo "[prebuild] make ($parent) exited: stopping the builds"
            kill -- -$$
        fi
        sleep 2
    done
' prebuild "$parent" >"$log" 2>&1 </dev/null &
echo "=== prebuild: the e2e tier's cached builds run in the background (log: $log)"

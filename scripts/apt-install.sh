#!/usr/bin/env bash
# Install Debian packages for a test dependency: `apt-get install PKG...`, and when that fails
# `apt-get update` and install again (a fresh machine's package lists may be missing or stale).
# Every apt-get waits up to 300 s for dpkg's lock: make test's background e2e prebuild may hold
# it. Uses sudo when not root. Output goes to stderr; the exit status is apt-get's. Callers print
# their own one-line error naming what failed.
set -euo pipefail
(($#)) || { echo "usage: $0 PACKAGE..." >&2; exit 2; }
apt=(apt-get -o DPkg::Lock::Timeout=300)
[[ $(id -u) -eq 0 ]] || apt=(sudo "${apt[@]}")
export DEBIAN_FRONTEND=noninteractive
"${apt[@]}" install -y -q "$@" >&2 || { "${apt[@]}" update -q >&2 && "${apt[@]}" install -y -q "$@" >&2; }

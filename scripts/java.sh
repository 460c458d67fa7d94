#!/usr/bin/env bash
# Java 17+ for Spark (the pipeline tier and `metaquorum-pipeline campaign`): PySpark 4.0 starts a
# JVM. Uses the java on PATH when it is 17 or newer, else installs Debian's
# openjdk-17-jre-headless like every other test dependency. Idempotent; prints java's path.
set -euo pipefail
major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null || [[ "$(major)" -lt 17 ]]; then
    echo "java: installing openjdk-17-jre-headless (apt-get)" >&2
    SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q openjdk-17-jre-headless >&2 \
        || { $SUDO apt-get -o DPkg::Lock::Timeout=300 update -q >&2 && $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q openjdk-17-jre-headless >&2; } \
        || { echo "java: could not install openjdk-17-jre-headless with apt-get" >&2; exit 1; }
fi
command -v java

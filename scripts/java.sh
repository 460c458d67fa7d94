#!/usr/bin/env bash
# Java 17+ for Spark (the pipeline tier and `metaquorum-pipeline campaign`): PySpark 4.0 starts a
# JVM. Uses the java on PATH when it is 17 or newer, else installs Debian's
# openjdk-17-jre-headless like every other test dependency. Idempotent; prints java's path.
set -euo pipefail
major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null || [[ "$(major)" -lt 17 ]]; then
    echo "java: installing openjdk-17-jre-headless (apt-get)" >&2
    "$(dirname "$0")/apt-install.sh" openjdk-17-jre-headless \
        || { echo "java: could not install openjdk-17-jre-headless with apt-get" >&2; exit 1; }
fi
command -v java

#!/usr/bin/env bash
# Compile the Kafka oracle (Oracle.java, OracleRecords.java) against Kafka's jars, once per (source, Kafka version,
# javac version), into ~/.cache/metaquorum/oracle-<hash>/classes. Prints that classes dir.
# Usage: build.sh <kafka lib dir>
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
lib="${1:?usage: build.sh <kafka lib dir> (see scripts/kafka-jars.sh)}"
version="${KAFKA_VERSION:-$(cat "$root/KAFKA_VERSION")}"
command -v javac >/dev/null || { echo "oracle: javac not found; install a JDK 17 (apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }
hash="$( { cat "$here/Oracle.java" "$here/OracleRecords.java"; echo "$version"; javac -version 2>&1; } | sha256sum | cut -c1-16)"
out="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}/oracle-$hash"
if [ -f "$out/.complete" ]; then echo "$out/classes"; exit 0; fi
mkdir -p "$(dirname "$out")"
tmp="$(mktemp -d "$out.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
javac --release 17 -nowarn -encoding UTF-8 -cp "$lib/*" -d "$tmp/classes" "$here/Oracle.java" "$here/OracleRecords.java" >&2
touch "$tmp/.complete"
# Another run may have finished first: keep whichever landed, both are identical.
mv -T "$tmp" "$out" 2>/dev/null || true
echo "$out/classes"

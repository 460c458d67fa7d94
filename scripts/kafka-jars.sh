#!/usr/bin/env bash
# Resolve Apache Kafka's published jars (version pinned in KAFKA_VERSION) from Maven Central into
# ~/.cache/metaquorum/kafka-<version>/lib, once; later runs reuse the cache. Prints the lib dir.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="${KAFKA_VERSION:-$(cat "$root/KAFKA_VERSION")}"
cache="${METAQUORUM_CACHE:-$HOME/.cache/metaquorum}/kafka-$version"
if [ -f "$cache/.complete" ]; then echo "$cache/lib"; exit 0; fi
command -v mvn >/dev/null || { echo "kafka-jars: mvn not found; install Maven (apt-get install maven)" >&2; exit 1; }
mkdir -p "$cache"
cp "$root/tests/conformance/kafka/pom.xml" "$cache/pom.xml"
start=$(date +%s)
( cd "$cache" && mvn -B -q -Dkafka.version="$version" dependency:copy-dependencies \
    -DoutputDirectory=lib -DincludeScope=runtime >&2 )
touch "$cache/.complete"
echo "kafka-jars: $(ls "$cache/lib" | wc -l) jars, $(du -sh "$cache/lib" | cut -f1), $(( $(date +%s) - start ))s" >&2
echo "$cache/lib"

#!/usr/bin/env bash
# Kafka's own kafka-metadata-quorum.sh, from the published jars: what bin/kafka-metadata-quorum.sh
# of a Kafka distribution runs (kafka-run-class.sh org.apache.kafka.tools.MetadataQuorumCommand),
# with the jars scripts/kafka-jars.sh caches (Maven Central, KAFKA_VERSION) and Java 17+
# (scripts/java.sh). `make cluster-shell` puts it on PATH. Arguments as Kafka's tool.
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
lib="$("$here/kafka-jars.sh")"
java="$("$here/java.sh")"
exec "$java" -Xshare:auto -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$lib/*" \
    org.apache.kafka.tools.MetadataQuorumCommand "$@"

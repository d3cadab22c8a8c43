#!/usr/bin/env bash
# Regenerates actors/src/config_catalog/kafka_broker_configs.rs from Kafka's own broker
# configuration definitions, never from memory:
#   1. Maven resolves org.apache.kafka:kafka_2.13:$KAFKA_VERSION (kafka-server,
#      kafka-server-common, kafka-storage, the coordinators, kafka-raft, kafka-metadata
#      come with it) into a throwaway project under a temp dir; nothing is kept.
#   2. Extract.java prints every key of KafkaConfig's ConfigDef with DynamicBrokerConfig's
#      update mode, one JSON object a line.
#   3. generate.py turns that into the Rust table.
# kafka-4.4-broker-describe.tsv (what the test compares the gateway's BROKER describe
# with) came from Kafka 4.4 itself: `kafka.Kafka` in KRaft combined mode on loopback (as
# benches/kafka_compare/procs.rs starts it), then DescribeBroker.java against it:
#   java -cp "$TMP/classes:$(cat "$TMP/cp")" DescribeBroker 127.0.0.1:PORT 1 > kafka-4.4-broker-describe.tsv
#   usage: tests/kafka_configs/generate.sh   (KAFKA_VERSION=4.4.0 by default)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VERSION=${KAFKA_VERSION:-4.4.0}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tmp</groupId><artifactId>kafka-configs</artifactId><version>0</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
mvn -B -q -f "$TMP/pom.xml" dependency:build-classpath -Dmdep.outputFile="$TMP/cp" >&2
javac -d "$TMP/classes" -cp "$(cat "$TMP/cp")" "$HERE/Extract.java" "$HERE/DescribeBroker.java"
java -cp "$TMP/classes:$(cat "$TMP/cp")" Extract \
    | python3 "$HERE/generate.py" > "$ROOT/actors/src/config_catalog/kafka_broker_configs.rs"
echo "wrote actors/src/config_catalog/kafka_broker_configs.rs from Kafka $VERSION" >&2

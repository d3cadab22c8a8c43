#!/usr/bin/env bash
# Issue 18's benchmark in one command: the gateway (embedded store and on iggy-server),
# Apache Kafka and Tansu in one run (benches/kafka_compare/main.rs), then the plot.
#   benches/kafka-compare.sh            a full run (about 15 minutes on 2 vCPUs)
#   BENCH_SCALE=0.2 benches/kafka-compare.sh
# Kafka's jars (kafka_2.13 and kafka-tools, as tests/frameworks/kafka-tools/pom.xml
# pins them) come from Maven unless KAFKA_CLASSPATH names them; iggy-server and tansu
# from IGGY_SERVER_BIN and TANSU_BIN or PATH (a system without its binary is skipped).
# Tables in $BENCH_OUT/results.md (default target/kafka-compare), the plot in $PLOT
# (default docs/perf/kafka-compare.png; needs matplotlib in $PYTHON).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ -z "${KAFKA_CLASSPATH:-}" ]; then
    pom=tests/frameworks/kafka-tools/pom.xml
    mvn -B -q -f "$pom" dependency:build-classpath -Dmdep.outputFile=target/classpath >&2
    KAFKA_CLASSPATH=$(cat tests/frameworks/kafka-tools/target/classpath)
fi
export KAFKA_CLASSPATH
if [ -z "${IGGY_SERVER_BIN:-}" ] && command -v iggy-server >/dev/null; then
    IGGY_SERVER_BIN=$(command -v iggy-server)
    export IGGY_SERVER_BIN
fi
if [ -z "${TANSU_BIN:-}" ] && command -v tansu >/dev/null; then
    TANSU_BIN=$(command -v tansu)
    export TANSU_BIN
fi
export BENCH_OUT=${BENCH_OUT:-$ROOT/target/kafka-compare}
cargo bench --bench kafka_compare
"${PYTHON:-python3}" benches/kafka_compare/plot.py "$BENCH_OUT/results.json" \
    "${PLOT:-docs/perf/kafka-compare.png}"

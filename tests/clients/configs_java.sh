#!/usr/bin/env bash
# Compiles and runs ConfigsJava.java (Java kafka-clients AdminClient replaying framework configuration calls)
# against the kafka-clients 3.9 jars .ci/client-deps.sh unpacks into .venv/kafka-java.
#   usage: configs_java.sh HOST:PORT
set -euo pipefail

BOOTSTRAP=${1:?usage: configs_java.sh HOST:PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
JARS=${KAFKA_JAVA_LIBS:-$HERE/../../.venv/kafka-java}
fail() { echo "FAIL java-configs: $*" >&2; exit 1; }
[ -f "$JARS/kafka-clients.jar" ] || fail "no kafka-clients.jar in $JARS (run .ci/client-deps.sh)"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CP=$(printf '%s:' "$JARS"/*.jar)
javac -nowarn -d "$TMP" -cp "$CP" "$HERE/ConfigsJava.java" || fail "javac failed"
# No slf4j provider is on the class path: the client's own logging stays silent
# apart from slf4j's one-time notice, dropped here.
status=0
timeout 90 java -cp "$TMP:$CP" ConfigsJava "$BOOTSTRAP" 2> >(grep -v '^SLF4J' >&2) || status=$?
[ $status -ne 124 ] || fail "timed out after 90 s"
exit $status
